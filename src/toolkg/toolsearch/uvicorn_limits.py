"""uvicorn for ``toolkg mcp --transport http``, holding against slow clients as ``toolkg serve`` does.

uvicorn (0.54, h11) has no timeout on reading a request: its keep-alive timeout runs only between requests,
and any byte cancels it. A review found 40 connections dripping one header line every 1-2 s all still open
after 40 s, and, under a file descriptor limit of 256, 300 half-sent requests (from any local process, before
any token is checked) stopped the server: every descriptor held, ``accept`` failing, and the error's logging
itself failing to open a file. Here, with ``toolkg.netpolicy``'s rules and numbers (``toolkg serve`` holds to
the same ones):

- Which waiting connections are cut, and when, is ``toolkg.admission.Waiting``'s (``toolkg serve`` keeps its
  connections in one too): a deadline for the whole request, armed when a connection opens and again after
  each answer, which a trickle of bytes does not push back; an address's slow connections past its cap, oldest
  first; the oldest past ``waiting_cap()`` in all. ``GuardedH11Protocol`` (uvicorn's h11 protocol, given as
  ``http=``) tells it when a connection's wait starts and when the request is whole, body included (h11 says
  the client is DONE); the server's loop sweeps it every ``SWEEP_EVERY_S`` while any connection waits. A
  connection cut while its client has a request under way gets 408.
- If ``accept`` runs out of descriptors anyway (answers, streams and files hold the rest), asyncio tells the
  loop's exception handler; ours has ``Waiting`` cut the oldest waiting connections, and asyncio retries a
  second later.
- ``limit_concurrency`` (uvicorn's 503 to a new request past that many connections) is three quarters of
  the descriptor limit, at most ``MAX_CONNECTIONS``: above the waiting cap, so a flood of waiting
  connections does not turn normal requests away, and below the limit itself.
- A request whose end is ambiguous (``netpolicy.framing_refusal``: a folded header line, Content-Length with
  Transfer-Encoding, two Content-Lengths) gets 400 and the connection is closed, before h11 reads it: h11
  unfolds folded lines and keeps the connection after Content-Length with Transfer-Encoding. Request headers
  over 16 KiB get 431 (h11 would answer 400). Both are ``netpolicy.read_head``'s verdict, as in ``toolkg serve``.
- A client that stops reading its answer is cut: once the answer's bytes fill the transport's buffer (asyncio
  pauses writing), the client has ``WRITE_TIMEOUT_S`` to read some before the connection is aborted. Without
  it the application waited on uvicorn's drain for ever, holding the connection and the answer; ``toolkg
  serve`` bounds each write of an answer by the same time.
- No WebSocket support: MCP's Streamable HTTP does not use it, and an upgraded connection would leave
  these limits (and the gate, which checks HTTP requests).
"""

from __future__ import annotations

import asyncio
import socket
from http import HTTPStatus
from typing import Any

import h11
from uvicorn import Config, Server
from uvicorn.config import STARTUP_FAILURE
from uvicorn.protocols.http.h11_impl import H11Protocol

from toolkg import admission
from toolkg.admission import CUT_WHEN_OUT_OF_FDS as CUT_WHEN_OUT_OF_FDS  # re-exported: what the shortage cuts
from toolkg.admission import SWEEP_EVERY_S
from toolkg.errors import ToolkgError
from toolkg.netpolicy import (
    MAX_HEAD_BYTES,
    WRITE_TIMEOUT_S,
    closing_answer,
    fd_limit,
    head_too_large,
    read_head,
    waiting_cap,
)

MAX_CONNECTIONS = 1024  # connections in all before a new request gets 503 (uvicorn's limit_concurrency)
_OUT_OF_FDS = "socket.accept() out of system resource"  # asyncio's message (selector_events)
_WHOLE = (h11.DONE, h11.MUST_CLOSE, h11.MIGHT_SWITCH_PROTOCOL)  # h11's states for a client whose request is in


def concurrency_limit() -> int:
    """uvicorn's ``limit_concurrency``: ``MAX_CONNECTIONS``, or three quarters of the descriptor limit."""
    soft = fd_limit()
    return MAX_CONNECTIONS if soft is None else max(waiting_cap() + 16, min(MAX_CONNECTIONS, soft * 3 // 4))


class Waiting(admission.Waiting["GuardedH11Protocol"]):
    """``admission.Waiting``, swept on the server's event loop every ``SWEEP_EVERY_S`` while a connection waits
    (an idle server is not woken)."""

    def __init__(self, cap: int | None = None) -> None:
        super().__init__(cap, who="toolkg mcp")
        self._sweeper: asyncio.TimerHandle | None = None

    def swept_on(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._sweeper is None and self.connections:
            self._sweeper = loop.call_later(SWEEP_EVERY_S, self._sweep_again, loop)

    def _sweep_again(self, loop: asyncio.AbstractEventLoop) -> None:
        self._sweeper = None
        self.sweep()
        self.swept_on(loop)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, its waits kept in ``Waiting`` (module doc). Subclassed per server by
    ``guarded_protocol``, which sets ``waiting``."""

    waiting: Waiting

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.address = ""
        self._received = False  # bytes of a request arrived since the wait started
        self._head: bytearray | None = bytearray()  # the next request's head so far; None once it is checked
        self._write_timer: asyncio.TimerHandle | None = None  # armed while the client reads nothing of its answer

    # -- the wait: from opening (or the last answer) until the request is whole ----------------------------

    def _wait(self) -> None:
        self._received = False
        self.waiting.add(self)
        self.waiting.swept_on(self.loop)

    def cut(self, reason: str) -> None:
        """Close the connection: with 408 if the client has started a request that has no answer yet (and
        without a word if it sent nothing, or its answer has gone out already)."""
        self.waiting.discard(self)
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            # The application may be reading this request's body: it now hears a disconnect, and whatever it
            # sends is dropped rather than written after the 408.
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        if self._received and self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            self.transport.write(closing_answer(HTTPStatus.REQUEST_TIMEOUT, reason))
        self.transport.close()

    # -- uvicorn's hooks ------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.address = self.client[0] if self.client else ""
        self._wait()

    def connection_lost(self, exc: Exception | None) -> None:
        self.waiting.discard(self)
        self._stop_write_timer()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        """The transport's buffer is full: the client has not read what was sent (module doc)."""
        super().pause_writing()
        if self._write_timer is None:
            self._write_timer = self.loop.call_later(WRITE_TIMEOUT_S, self._write_stalled)

    def resume_writing(self) -> None:
        self._stop_write_timer()
        super().resume_writing()

    def _stop_write_timer(self) -> None:
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None

    def _write_stalled(self) -> None:
        self._write_timer = None
        # abort, not close: close waits for the buffer to drain, which is what is not happening. The application
        # hears a disconnect (uvicorn's connection_lost), so its drain returns and what it sends next is dropped.
        self.transport.abort()

    def data_received(self, data: bytes) -> None:
        self._received = True
        if self._head is not None and not self._framing_ok(data):
            return
        super().data_received(data)

    def _framing_ok(self, data: bytes) -> bool:
        """Check the request's head (``netpolicy.read_head``: its size, an ambiguous end) once it is in, before
        h11 reads it: h11 refuses two different Content-Lengths itself, but unfolds a folded header line and
        keeps the connection after Content-Length with Transfer-Encoding; False (answered, closed) if refused."""
        assert self._head is not None, "called while the head is being read"
        self._head += data
        verdict = read_head(self._head, MAX_HEAD_BYTES, chunked_allowed=True)
        if verdict is None:
            return True
        self._head = None
        if isinstance(verdict, int):
            return True
        self.waiting.discard(self)
        self.transport.write(closing_answer(*verdict))
        self.transport.close()
        return False

    def handle_events(self) -> None:
        super().handle_events()
        # Once h11 has read the request's end the request is whole, and it is the application's turn: the
        # client is DONE (MUST_CLOSE after Connection: close; MIGHT_SWITCH_PROTOCOL after an Upgrade header,
        # until the answer, never a 101 here, says no).
        if self.conn.their_state in _WHOLE:
            self.waiting.discard(self)

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            self._wait()  # the next request's wait starts now (uvicorn's keep-alive timeout runs beside it)
            # The next request's head is checked too, from what h11 holds of it already (a pipelined one).
            self._head = bytearray()
            if not self._framing_ok(bytes(self.conn.trailing_data[0])[: MAX_HEAD_BYTES + 1]):
                return
        super().on_response_complete()  # which reads a pipelined next request, if one is in

    def send_400_response(self, msg: str) -> None:
        """h11 refuses a request line and headers over 16 KiB as a protocol error: that one is a 431 (a head
        ``read_head`` took as ended where h11 reads on, e.g. at a bare line feed, can still get here)."""
        if len(self.conn.trailing_data[0]) > MAX_HEAD_BYTES:
            status = HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE
            self.transport.write(closing_answer(status, head_too_large(MAX_HEAD_BYTES)))
            self.transport.close()
            return
        super().send_400_response(msg)


def guarded_protocol(waiting: Waiting) -> type[GuardedH11Protocol]:
    """A protocol class for one server, its connections counted in ``waiting``."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"waiting": waiting})


class GuardedServer(Server):
    """uvicorn's server, with a loop exception handler that makes room when ``accept`` runs out of
    descriptors (asyncio's default handler logs a traceback, and under the same shortage the logging itself
    failed and ended the server)."""

    def __init__(self, config: Config, waiting: Waiting) -> None:
        super().__init__(config)
        self.waiting = waiting

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        asyncio.get_running_loop().set_exception_handler(self._loop_error)
        await super().serve(sockets)

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") == _OUT_OF_FDS:
            self.waiting.out_of_descriptors()
            return
        loop.default_exception_handler(context)


def guarded_server(app: Any, host: str, port: int) -> GuardedServer:
    """A uvicorn server for the ASGI ``app`` on host:port with the limits above, not yet running."""
    waiting = Waiting()
    config = Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        http=guarded_protocol(waiting),
        ws="none",
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        limit_concurrency=concurrency_limit(),
    )
    return GuardedServer(config, waiting)


def run(app: Any, host: str, port: int, sock: socket.socket | None = None) -> None:
    """Serve the ASGI ``app`` on host:port until stopped, as ``uvicorn.run`` would, with the limits above; on
    ``sock`` when given, a socket already bound to host:port (``netpolicy.listening_socket``)."""
    server = guarded_server(app, host, port)
    try:
        server.run(sockets=None if sock is None else [sock])
    except KeyboardInterrupt:
        return
    except SystemExit as exc:  # uvicorn's exit when it could not start: its code (3) is toolkg's "quarantined"
        if exc.code != STARTUP_FAILURE:
            raise
    if not server.started:  # uvicorn logged why
        raise ToolkgError(f"the MCP server on {host}:{port} could not start (uvicorn's reason is above)")
