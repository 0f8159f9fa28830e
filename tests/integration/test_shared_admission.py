"""Both HTTP servers cut waiting connections by one piece of code (``toolkg.admission``, over ``toolkg.netpolicy``'s
numbers), not each by its own copy of the rules: a number changed in ``netpolicy`` changes what ``toolkg serve``'s
selector server and ``toolkg mcp --transport http``'s uvicorn both do. Each test runs both, in this process
(where the change is made), on a trivial application, and attacks them with raw sockets. The last one runs
``toolkg serve``'s server alone under a low descriptor limit (``toolkg mcp``'s: tests/e2e/test_mcp_slow_clients.py)."""

from __future__ import annotations

import http.client
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest

from toolkg import netpolicy
from toolkg.serve.http_server import OneRequestHandler, PooledHTTPServer
from toolkg.toolsearch import uvicorn_limits

SERVERS = ("serve", "mcp")
PARTIAL = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n"  # a request whose headers never end


class _Hello(OneRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def _hello(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            await send({"type": message["type"] + ".complete"})
            if message["type"] == "lifespan.shutdown":
                return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"3")]})
    await send({"type": "http.response.body", "body": b"ok\n"})


@contextmanager
def running(kind: str) -> Iterator[int]:
    """The server ``kind`` (``toolkg serve``'s or ``toolkg mcp``'s) on a free loopback port; yields the port."""
    if kind == "serve":
        pooled = PooledHTTPServer(("127.0.0.1", 0), _Hello, workers=2)
        thread = threading.Thread(target=pooled.serve_forever, daemon=True)
        thread.start()
        try:
            yield pooled.server_address[1]
        finally:
            pooled.shutdown()
            pooled.server_close()
        return
    sock = netpolicy.listening_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server = uvicorn_limits.guarded_server(_hello, "127.0.0.1", port)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def _partial(port: int, stack: ExitStack) -> socket.socket:
    conn = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=5))
    conn.sendall(PARTIAL)
    time.sleep(0.1)  # accepted and read before the next one opens: the order of their waits is known
    return conn


def _closed_with(conn: socket.socket, within: float) -> bytes | None:
    """What the server sent before closing ``conn`` within ``within`` seconds; None if it kept it open."""
    received = b""
    give_up = time.monotonic() + within
    while (left := give_up - time.monotonic()) > 0:
        if not select.select([conn], [], [], left)[0]:
            break
        try:
            chunk = conn.recv(65536)
        except ConnectionResetError:  # closed before the server read what it was sent: the kernel resets it
            return received
        if not chunk:
            return received
        received += chunk
    return None


@pytest.mark.parametrize("kind", SERVERS)
def test_past_the_waiting_cap_the_oldest_connections_make_room(kind, monkeypatch) -> None:
    monkeypatch.setattr(netpolicy, "waiting_cap", lambda: 3)  # 512 by default: this needs 513 connections
    with running(kind) as port, ExitStack() as stack:
        conns = [_partial(port, stack) for _ in range(5)]
        for oldest in conns[:2]:
            received = _closed_with(oldest, 2.0)
            assert received is not None and received.startswith(b"HTTP/1.1 408 "), (kind, received)
            assert b"more than 3 connections waiting" in received, received
        assert select.select(conns[2:], [], [], 0.3)[0] == [], kind  # the newest three: open, nothing said


@pytest.mark.parametrize("kind", SERVERS)
def test_the_request_deadline_is_the_one_in_netpolicy(kind, monkeypatch) -> None:
    monkeypatch.setattr(netpolicy, "REQUEST_DEADLINE_S", 1.0)  # 10 s by default
    with running(kind) as port, ExitStack() as stack:
        conn = _partial(port, stack)
        opened = time.monotonic() - 0.1
        received = _closed_with(conn, 3.0)
        lasted = time.monotonic() - opened
        assert received is not None and received.startswith(b"HTTP/1.1 408 "), (kind, received)
        assert 0.9 < lasted < 2.0, (kind, lasted)


@pytest.mark.parametrize("kind", SERVERS)
def test_an_address_s_slow_connections_are_capped_as_netpolicy_says(kind, monkeypatch) -> None:
    monkeypatch.setattr(netpolicy, "SLOW_AFTER_S", 0.2)  # 1 s by default: the cuts below come before that
    monkeypatch.setattr(netpolicy, "MAX_SLOW_PER_CLIENT", 1)  # 8 by default
    with running(kind) as port, ExitStack() as stack:
        conns = [_partial(port, stack) for _ in range(3)]
        for oldest in conns[:2]:
            received = _closed_with(oldest, 0.6)
            assert received is not None and received.startswith(b"HTTP/1.1 408 "), (kind, received)
            assert b"more than 1 slow connections from 127.0.0.1" in received, received
        assert _closed_with(conns[2], 0.5) is None, kind


SERVE_UNDER_A_LOW_FD_LIMIT = """
import resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
from toolkg import netpolicy
netpolicy.waiting_cap = lambda: 1000  # past the limit: what runs out is accept's descriptors, not the cap
from toolkg.serve.http_server import OneRequestHandler, PooledHTTPServer

class Hello(OneRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\\n")

server = PooledHTTPServer(("127.0.0.1", 0), Hello, workers=2)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


@pytest.mark.slow  # a server process of its own, and a second of shortage
def test_toolkg_serve_out_of_descriptors_cuts_the_oldest_and_keeps_answering() -> None:
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE_UNDER_A_LOW_FD_LIMIT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        with ExitStack() as stack:
            held = [stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=5)) for _ in range(120)]
            for conn in held:
                conn.sendall(PARTIAL)
            started = time.monotonic()
            client = http.client.HTTPConnection("127.0.0.1", port, timeout=8)
            client.request("GET", "/")
            answer = client.getresponse()
            assert (answer.status, answer.read()) == (200, b"ok\n")
            assert time.monotonic() - started < 4.0
            client.close()
            cut = sum(1 for conn in held if _closed_with(conn, 0.01) is not None)
            assert cut >= 16, cut  # the oldest made room, CUT_WHEN_OUT_OF_FDS at a time
        assert server.poll() is None
    finally:
        server.terminate()
        _, errors = server.communicate(timeout=20)
    assert "toolkg serve: out of file descriptors (limit 64): closed 16 connection(s)" in errors, errors[-2000:]
    assert "Traceback" not in errors, errors[-2000:]
