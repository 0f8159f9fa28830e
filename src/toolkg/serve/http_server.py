"""The endpoint's HTTP server: requests read whole off the worker threads, against a deadline, then answered.

A server that gives each connection a thread while it reads the request (``socketserver``'s threading
servers, or a pool of them) is starved by slow clients: 33 connections that each send one header line every
5 s held all 32 threads of the pool this replaced, a normal client timed out after 20 s, and a per-read socket
timeout never cut them (each line resets it). Here:

- One thread (``serve_forever``) owns the listening socket and every connection that is not being answered.
  It reads what arrives without blocking (a selector) and hands a connection to the pool only once a whole
  request is in: its headers, and the body its Content-Length announces (up to the body limit). A client
  that drips bytes costs a file descriptor and a buffer, never a worker.
- A request whose end is ambiguous (two Content-Lengths, a list of them, Content-Length with
  Transfer-Encoding, any Transfer-Encoding, a folded or padded header name) is refused and its connection
  closed before any of it is answered (``framing_refusal``): otherwise the bytes one reader takes for its body
  another takes for the next request (request smuggling).
- Which waiting connections are cut, and when, is ``toolkg.admission.Waiting``'s, as in ``toolkg mcp
  --transport http``: a request must be whole within ``REQUEST_DEADLINE_S`` of the connection opening (or of
  the previous answer, on a kept-alive connection), a deadline which a drip of bytes cannot push back; a
  client address may keep ``MAX_SLOW_PER_CLIENT`` connections waiting longer than ``SLOW_AFTER_S``, its
  oldest past that are cut (a newcomer is never refused: on a loopback endpoint every client shares the
  address); at most ``waiting_cap()`` connections wait in all, past that the oldest makes room; and when
  ``accept`` runs out of descriptors the oldest are cut and accepting pauses until the next sweep. A
  connection cut with part of a request in gets 408; one that sent nothing is closed without a word. This
  server tells ``Waiting`` when a wait starts and ends and sweeps it every ``SWEEP_EVERY_S``.
- A worker answers one request, then hands a kept-alive connection back with whatever the client sent after
  it; an answer is written with a total timeout (``sendall``'s), so a client that stops reading cannot hold a
  worker past ``WRITE_TIMEOUT_S``.

The rules (framing, the head limit, the deadline, the caps, the refusal's bytes) are ``toolkg.netpolicy``'s, and
the code that applies them (``netpolicy.read_head``, ``toolkg.admission``) is the one ``toolkg mcp --transport
http`` runs too: this module is the adapter to a selector loop and a pool of threads.
"""

from __future__ import annotations

import io
import queue
import selectors
import socket
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from toolkg.admission import SWEEP_EVERY_S, Waiting
from toolkg.display import one_line
from toolkg.netpolicy import MAX_QUERY_HEAD_BYTES, WRITE_TIMEOUT_S, closing_answer, read_head
from toolkg.netpolicy import head_end as head_end  # re-exported: where a request's head ends, beside request_end
from toolkg.serve.page_policy import security_headers
from toolkg.serve.sparql_protocol import MAX_BODY_BYTES

WORKERS = 32


@dataclass(eq=False)
class Pending:
    """A connection waiting for (the rest of) its next request, with what it sent so far; ``on_cut`` is its
    server's way to cut it (``Waiting`` calls ``cut``)."""

    sock: socket.socket
    peer: tuple  # the client's socket address, as accept gives it
    on_cut: Callable[[Pending, str], None]
    data: bytearray = field(default_factory=bytearray)
    continued: bool = False  # "100 Continue" sent for the request being read

    @property
    def address(self) -> str:
        return str(self.peer[0])

    def cut(self, reason: str) -> None:
        self.on_cut(self, reason)


def header_fields(head: bytes | bytearray) -> dict[str, str]:
    """The first value of each header (as ``email.message`` reads them), names lower-cased."""
    fields: dict[str, str] = {}
    for line in bytes(head).split(b"\n")[1:]:
        name, colon, value = line.partition(b":")
        if colon:
            fields.setdefault(name.strip().lower().decode("latin-1"), value.strip().decode("latin-1"))
    return fields


def request_end(head: int, fields: dict[str, str]) -> int:
    """Where the request ends: after its body when the handler will read one, else at the end of the headers
    (chunked, a bad or an over-limit Content-Length: the handler refuses those without reading the body)."""
    length = fields.get("content-length")
    if "transfer-encoding" in fields or length is None or not length.isdigit() or int(length) > MAX_BODY_BYTES:
        return head
    return head + int(length)


class _SocketWriter(io.RawIOBase):
    """``wfile``: writes straight to the socket with ``sendall`` (its timeout bounds the whole write)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self._sock.sendall(data)
        return len(data)


class OneRequestHandler(BaseHTTPRequestHandler):
    """A request handler for ``PooledHTTPServer``: the request is already read (``self.request`` is the
    ``Pending`` connection with its bytes); it answers that one request and leaves the connection to the server."""

    def setup(self) -> None:
        waiting: Pending = self.request
        self.connection = waiting.sock
        self.rfile = io.BytesIO(bytes(waiting.data))
        # A raw writer, as socketserver's own wfile for unbuffered handlers; typeshed declares a buffered one.
        self.wfile = _SocketWriter(waiting.sock)  # type: ignore[assignment]

    def handle(self) -> None:
        self.close_connection = True
        self.handle_one_request()

    def handle_expect_100(self) -> bool:
        return True  # the server sent "100 Continue" itself when it waited for the body

    def finish(self) -> None:
        pass


class PooledHTTPServer(HTTPServer):
    """An HTTP server that reads requests on one thread and answers them on a bounded pool (module doc).

    The listen backlog is 128, not socketserver's 5: with 5, 20 clients connecting at once saw refused SYNs
    retried a second later."""

    request_queue_size = 128
    allow_reuse_address = True

    def __init__(self, address, handler: type[BaseHTTPRequestHandler], workers: int = WORKERS) -> None:
        # Bound after the state below exists: a bind that fails (a busy port) calls server_close, which closes it.
        super().__init__(address, handler, bind_and_activate=False)
        # RequestHandlerClass, typed as _answer calls it: its request is a Pending (OneRequestHandler.setup)
        self._handler: Callable[[Pending, Any, PooledHTTPServer], BaseHTTPRequestHandler] = handler
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="toolkg-serve")
        self._selector = selectors.DefaultSelector()
        self._waiting: Waiting[Pending] = Waiting(who="toolkg serve")  # touched by the reading thread only
        self._accepting = True  # False from accept running out of descriptors to the next sweep
        self._returned: queue.SimpleQueue[Pending] = queue.SimpleQueue()  # kept-alive connections, from workers
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_write.setblocking(False)
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()
        try:
            self.server_bind()
            self.server_activate()
        except BaseException:
            self.server_close()
            raise
        self.socket.setblocking(False)

    # -- the reading thread -------------------------------------------------------------------------------

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        self._stopped.clear()
        self._selector.register(self.socket, selectors.EVENT_READ, "listen")
        self._selector.register(self._wake_read, selectors.EVENT_READ, "wake")
        next_sweep = time.monotonic()
        try:
            while not self._stop.is_set():
                for key, _ in self._selector.select(min(poll_interval, SWEEP_EVERY_S)):
                    if key.data == "listen":
                        self._accept()
                    elif key.data == "wake":
                        self._wake_read.recv(4096)
                    else:
                        self._read(key.data)
                self._take_returned()
                if time.monotonic() >= next_sweep:
                    self._waiting.sweep()
                    if not self._accepting:
                        self._selector.register(self.socket, selectors.EVENT_READ, "listen")
                        self._accepting = True
                    next_sweep = time.monotonic() + SWEEP_EVERY_S
        finally:
            self._selector.unregister(self._wake_read)
            if self._accepting:
                self._selector.unregister(self.socket)
            self._accepting = True
            self._stop.clear()
            self._stopped.set()

    def shutdown(self) -> None:
        self._stop.set()
        self._wake()
        self._stopped.wait()

    def _accept(self) -> None:
        for _ in range(64):  # a burst, not forever: reading the others matters as much
            try:
                sock, address = self.socket.accept()
            except BlockingIOError:
                return
            except OSError:  # out of file descriptors: make room; the connection waits in the backlog, and
                # accepting waits for the next sweep (the listening socket stays readable: retrying at once spins)
                self._waiting.out_of_descriptors()
                self._selector.unregister(self.socket)
                self._accepting = False
                return
            sock.setblocking(False)
            self._start_waiting(Pending(sock, address, self._cut))

    def _start_waiting(self, waiting: Pending) -> None:
        self._selector.register(waiting.sock, selectors.EVENT_READ, waiting)
        self._waiting.add(waiting)  # which may cut the oldest waiting connection

    def _read(self, waiting: Pending) -> None:
        try:
            chunk = waiting.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            return self._drop(waiting)
        if not chunk:  # the client is done sending: what it sent is answered if anything (it may still read)
            return self._hand_over(waiting) if waiting.data else self._drop(waiting)
        waiting.data += chunk
        self._advance(waiting)

    def _advance(self, waiting: Pending) -> None:
        """Hand the connection over if its request is whole; else send 100 Continue, or refuse its head."""
        head = read_head(waiting.data, MAX_QUERY_HEAD_BYTES)
        if head is None:
            return
        if not isinstance(head, int):
            return self._refuse(waiting, *head)
        fields = header_fields(waiting.data[:head])
        if len(waiting.data) >= request_end(head, fields):
            return self._hand_over(waiting)
        if fields.get("expect", "").lower() == "100-continue" and not waiting.continued:
            waiting.continued = True
            self._send_quietly(waiting.sock, b"HTTP/1.1 100 Continue\r\n\r\n")

    def _hand_over(self, waiting: Pending) -> None:
        self._selector.unregister(waiting.sock)
        self._waiting.discard(waiting)
        self._pool.submit(self._answer, waiting)

    def _take_returned(self) -> None:
        while True:
            try:
                waiting = self._returned.get_nowait()
            except queue.Empty:
                return
            self._start_waiting(waiting)
            if waiting.data:  # a pipelined request may be whole already
                self._advance(waiting)

    def _cut(self, waiting: Pending, reason: str) -> None:
        """``Waiting``'s cut: 408 and ``reason`` to a client that has sent part of a request, silence to one
        that has sent nothing (idle since it opened, or since its last answer)."""
        if waiting.data:
            self._refuse(waiting, HTTPStatus.REQUEST_TIMEOUT, reason)
        else:
            self._drop(waiting)

    def _refuse(self, waiting: Pending, status: HTTPStatus, message: str) -> None:
        # the same security headers as every answer the handler writes (serve/page_policy)
        self._send_quietly(waiting.sock, closing_answer(status, message, security_headers()))
        self._drop(waiting)

    @staticmethod
    def _send_quietly(sock: socket.socket, data: bytes) -> None:
        """Best effort, never blocking the reading thread: a client that does not read misses it."""
        try:
            sock.send(data)
        except OSError:
            pass

    def _drop(self, waiting: Pending) -> None:
        self._waiting.discard(waiting)
        try:
            self._selector.unregister(waiting.sock)
        except (KeyError, ValueError):  # not registered: handed over to a worker, or closed already
            pass
        waiting.sock.close()

    def _wake(self) -> None:
        try:
            self._wake_write.send(b"x")
        except OSError:  # full: the reading thread is awake already
            pass

    # -- the workers --------------------------------------------------------------------------------------

    def _answer(self, waiting: Pending) -> None:
        sock = waiting.sock
        keep = False
        try:
            sock.settimeout(WRITE_TIMEOUT_S)  # blocking, with a total bound on each sendall
            handler = self._handler(waiting, waiting.peer, self)
            keep = not handler.close_connection and not self._stop.is_set()
            rest = handler.rfile.read() if keep else b""
        except Exception:
            self.handle_error(sock, waiting.peer)
        if not keep:
            self.shutdown_request(sock)
            return
        sock.setblocking(False)
        self._returned.put(Pending(sock, waiting.peer, self._cut, data=bytearray(rest)))
        self._wake()

    def handle_error(self, request, client_address) -> None:
        """One line on stderr, no traceback: a client that hangs up or times out is not the server's error."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        print(f"toolkg serve: request from {client_address[0]} failed: {one_line(repr(exc))}", file=sys.stderr)

    def server_close(self) -> None:
        super().server_close()
        for waiting in list(self._waiting.connections):
            self._drop(waiting)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._selector.close()
        self._wake_read.close()
        self._wake_write.close()
