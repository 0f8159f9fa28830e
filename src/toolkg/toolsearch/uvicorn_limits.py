"""uvicorn for ``toolkg mcp --transport http``, holding against slow clients as ``toolkg serve`` does.

uvicorn (0.54, h11) has no timeout on reading a request: its keep-alive timeout runs only between requests,
and any byte cancels it. A review found 40 connections dripping one header line every 1-2 s all still open
after 40 s, and, under a file descriptor limit of 256, 300 half-sent requests (from any local process, before
any token is checked) stopped the server: every descriptor held, ``accept`` failing, and the error's logging
itself failing to open a file. Here, with ``toolkg.netpolicy``'s rules and numbers (``toolkg serve`` holds to
the same ones):

- ``GuardedH11Protocol`` (uvicorn's h11 protocol, given as ``http=``) arms a deadline when a connection opens
  and again after each answer, and disarms it once the request is whole, body included (h11 says the client
  is DONE). A trickle of bytes does not push it back. Past it the client gets 408 (when it had started a
  request that has no answer yet) and the connection is closed.
- Connections without a whole request are ``Waiting``: oldest first, per client address too. An address's
  connections waiting over ``SLOW_AFTER_S`` beyond ``MAX_SLOW_PER_CLIENT`` are cut, oldest first; past
  ``waiting_cap()`` in all (half the descriptor limit) the oldest is cut when a new one opens.
- If ``accept`` runs out of descriptors anyway (answers, streams and files hold the rest), asyncio tells the
  loop's exception handler; ours cuts the oldest waiting connections and asyncio retries a second later.
- ``limit_concurrency`` (uvicorn's 503 to a new request past that many connections) is three quarters of
  the descriptor limit, at most ``MAX_CONNECTIONS``: above the waiting cap, so a flood of waiting
  connections does not turn normal requests away, and below the limit itself.
- A request whose end is ambiguous (``netpolicy.framing_refusal``: a folded header line, Content-Length with
  Transfer-Encoding, two Content-Lengths) gets 400 and the connection is closed, before h11 reads it: h11
  unfolds folded lines and keeps the connection after Content-Length with Transfer-Encoding.
- Oversized request headers (h11's 16 KiB) get 431 rather than uvicorn's 400, as ``toolkg serve`` answers.
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
import sys
from http import HTTPStatus
from itertools import takewhile
from typing import Any

import h11
from uvicorn import Config, Server
from uvicorn.config import STARTUP_FAILURE
from uvicorn.protocols.http.h11_impl import H11Protocol

from toolkg.errors import ToolkgError
from toolkg.netpolicy import (
    DEADLINE_PASSED,
    MAX_HEAD_BYTES,
    REQUEST_DEADLINE_S,
    SLOW_AFTER_S,
    WRITE_TIMEOUT_S,
    beyond_slow_cap,
    closing_answer,
    fd_limit,
    framing_refusal,
    head_end,
    head_too_large,
    too_many_slow,
    waiting_cap,
)

MAX_CONNECTIONS = 1024  # connections in all before a new request gets 503 (uvicorn's limit_concurrency)
CUT_WHEN_OUT_OF_FDS = 16  # waiting connections closed each time accept runs out of descriptors
_OUT_OF_FDS = "socket.accept() out of system resource"  # asyncio's message (selector_events)
_WHOLE = (h11.DONE, h11.MUST_CLOSE, h11.MIGHT_SWITCH_PROTOCOL)  # h11's states for a client whose request is in


def concurrency_limit() -> int:
    """uvicorn's ``limit_concurrency``: ``MAX_CONNECTIONS``, or three quarters of the descriptor limit."""
    soft = fd_limit()
    return MAX_CONNECTIONS if soft is None else max(waiting_cap() + 16, min(MAX_CONNECTIONS, soft * 3 // 4))


class Waiting:
    """The connections of one server still without a whole request, oldest first (overall and per address).

    Dicts keep insertion order, and a connection is removed and added again each time its wait starts, so
    the first entries are always the ones that have waited longest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.connections: dict[GuardedH11Protocol, None] = {}
        self.by_client: dict[str, dict[GuardedH11Protocol, None]] = {}
        self._last_fd_cut = float("-inf")

    def add(self, conn: GuardedH11Protocol) -> None:
        self.discard(conn)
        self.connections[conn] = None
        self.by_client.setdefault(conn.address, {})[conn] = None
        for oldest in list(self.connections)[: max(0, len(self.connections) - self.cap)]:
            oldest.cut(f"more than {self.cap} connections waiting for their request")

    def discard(self, conn: GuardedH11Protocol) -> None:
        self.connections.pop(conn, None)
        group = self.by_client.get(conn.address)
        if group is not None:
            group.pop(conn, None)
            if not group:
                del self.by_client[conn.address]

    def slow(self, conn: GuardedH11Protocol) -> None:
        """``conn`` has waited ``SLOW_AFTER_S``, and so has every connection of its address that waits since
        before it: past ``MAX_SLOW_PER_CLIENT`` of those, the oldest are cut."""
        group = self.by_client.get(conn.address, {})
        if conn not in group:  # its request became whole, or it was cut, in the meantime
            return
        slow = [*takewhile(lambda other: other is not conn, group), conn]
        for oldest in beyond_slow_cap(slow):
            oldest.cut(too_many_slow(conn.address))

    def out_of_descriptors(self, now: float) -> None:
        """``accept`` failed for want of a descriptor: close the oldest waiting connections (once per half
        second: asyncio calls this for every connection in the backlog, and retries only a second later)."""
        if now - self._last_fd_cut < 0.5:
            return
        self._last_fd_cut = now
        cut = list(self.connections)[:CUT_WHEN_OUT_OF_FDS]
        for oldest in cut:
            oldest.cut("out of file descriptors")
        print(
            f"toolkg mcp: out of file descriptors (limit {fd_limit()}): closed {len(cut)} connection(s) still "
            "waiting for their request",
            file=sys.stderr,
        )


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a whole-request deadline and the ``Waiting`` caps (module doc). Subclassed
    per server by ``guarded_protocol``, which sets ``waiting``."""

    waiting: Waiting

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.address = ""
        self._timers: list[asyncio.TimerHandle] = []
        self._received = False  # bytes of a request arrived since the wait started
        self._head: bytearray | None = bytearray()  # the next request's head so far; None once it is checked
        self._write_timer: asyncio.TimerHandle | None = None  # armed while the client reads nothing of its answer

    # -- the wait: from opening (or the last answer) until the request is whole ----------------------------

    def _wait(self) -> None:
        self._stop_waiting()
        self._received = False
        self.waiting.add(self)
        if not self.transport.is_closing():  # add cuts the oldest: this newest one only under a cap of 0
            self._timers = [
                self.loop.call_later(SLOW_AFTER_S, self.waiting.slow, self),
                self.loop.call_later(REQUEST_DEADLINE_S, self._deadline),
            ]

    def _stop_waiting(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers = []
        self.waiting.discard(self)

    def _deadline(self) -> None:
        self.cut(DEADLINE_PASSED)

    def cut(self, reason: str) -> None:
        """Close the connection: with 408 if the client has started a request that has no answer yet (and
        without a word if it sent nothing, or its answer has gone out already)."""
        self._stop_waiting()
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
        self._stop_waiting()
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
        """Check the request's head for an ambiguous end (``netpolicy.framing_refusal``) once it is in, before h11
        reads it: h11 refuses two different Content-Lengths itself, but unfolds a folded header line and keeps
        the connection after Content-Length with Transfer-Encoding; False (answered 400, closed) if refused."""
        assert self._head is not None, "called while the head is being read"
        self._head += data
        end = head_end(self._head)
        if end is None:
            if len(self._head) > MAX_HEAD_BYTES:
                self._head = None  # h11 refuses it (431, send_400_response)
            return True
        refusal = framing_refusal(self._head[:end], chunked_allowed=True)
        self._head = None
        if refusal is None:
            return True
        status, message = refusal
        self._stop_waiting()
        self.transport.write(closing_answer(status, message))
        self.transport.close()
        return False

    def handle_events(self) -> None:
        super().handle_events()
        # Once h11 has read the request's end the request is whole, and it is the application's turn: the
        # client is DONE (MUST_CLOSE after Connection: close; MIGHT_SWITCH_PROTOCOL after an Upgrade header,
        # until the answer, never a 101 here, says no).
        if self.conn.their_state in _WHOLE and self._timers:
            self._stop_waiting()

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            self._wait()  # the next request's wait starts now (uvicorn's keep-alive timeout runs beside it)
            # The next request's head is checked too, from what h11 holds of it already (a pipelined one).
            self._head = bytearray()
            if not self._framing_ok(bytes(self.conn.trailing_data[0])[: MAX_HEAD_BYTES + 1]):
                return
        super().on_response_complete()  # which reads a pipelined next request, if one is in

    def send_400_response(self, msg: str) -> None:
        """h11 refuses a request line and headers over 16 KiB as a protocol error: that one is a 431."""
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
            self.waiting.out_of_descriptors(loop.time())
            return
        loop.default_exception_handler(context)


def run(app: Any, host: str, port: int, sock: socket.socket | None = None) -> None:
    """Serve the ASGI ``app`` on host:port until stopped, as ``uvicorn.run`` would, with the limits above; on
    ``sock`` when given, a socket already bound to host:port (``netpolicy.listening_socket``)."""
    waiting = Waiting(waiting_cap())
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
    server = GuardedServer(config, waiting)
    try:
        server.run(sockets=None if sock is None else [sock])
    except KeyboardInterrupt:
        return
    except SystemExit as exc:  # uvicorn's exit when it could not start: its code (3) is toolkg's "quarantined"
        if exc.code != STARTUP_FAILURE:
            raise
    if not server.started:  # uvicorn logged why
        raise ToolkgError(f"the MCP server on {host}:{port} could not start (uvicorn's reason is above)")
