"""Request smuggling against `toolkg serve` and `toolkg mcp --transport http`, as an attack battery found it:
a request whose end is ambiguous (``Content-Length: 0, N``, two Content-Lengths, Content-Length with
Transfer-Encoding, ...) got two answers on one connection, the second to a request hidden in the first's
body. Each probe hides a whole ``GET`` in the body; the server must answer once (400, or 411 for a chunked
body), close the connection, and still answer the next client."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import CASES, TOOLKG
from tests.support.endpoint_helpers import free_port, get, serving
from tests.support.live_helpers import wait_listening

TOKEN = "smuggle-" + os.urandom(12).hex()


def _hidden(port: int) -> bytes:
    return f"GET /status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()


def _probes(port: int, method: str, path: str, extra: str) -> dict[str, tuple[bytes, int]]:
    """name -> (raw request with a request hidden after its headers, the status it must get)."""
    hidden = _hidden(port)
    n = len(hidden)
    chunked_hidden = f"{n:x}\r\n".encode() + hidden + b"\r\n0\r\n\r\n"
    start = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}"
    return {
        "a list of lengths": (f"{start}Content-Length: 0, {n}\r\n\r\n".encode() + hidden, 400),
        "two lengths": (f"{start}Content-Length: 0\r\nContent-Length: {n}\r\n\r\n".encode() + hidden, 400),
        "two lengths, reversed": (f"{start}Content-Length: {n}\r\nContent-Length: 0\r\n\r\n".encode() + hidden, 400),
        "length and chunked": (
            f"{start}Content-Length: {len(chunked_hidden)}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
            + chunked_hidden,
            400,
        ),
        "chunked and length 0": (
            f"{start}Transfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n".encode() + chunked_hidden,
            400,
        ),
        "a padded header name": (f"{start}Content-Length : {n}\r\n\r\n".encode() + hidden, 400),
        "a folded length": (f"{start}X-Note: a\r\n Content-Length: {n}\r\n\r\n".encode() + hidden, 400),
        "a superscript digit": (
            f"{start}Content-Length: ".encode() + "²".encode("latin-1") + b"\r\n\r\n" + hidden,
            400,
        ),
    }


def _exchange(port: int, data: bytes, timeout: float = 10) -> tuple[bytes, bool]:
    """Send ``data`` on one connection; (everything answered, whether the server closed the connection)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(data)
        chunks, closed = [], False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            conn.settimeout(max(deadline - time.monotonic(), 0.01))
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            chunks.append(chunk)
    return b"".join(chunks), closed


def _check(port: int, probes: dict[str, tuple[bytes, int]], statuses: dict[str, set[int]] | None = None) -> None:
    failures = []
    for name, (data, status) in probes.items():
        answer, closed = _exchange(port, data)
        answers = answer.count(b"HTTP/1.1 ") + answer.count(b"HTTP/1.0 ")
        first = answer.split(b"\r\n", 1)[0].decode(errors="replace")
        allowed = (statuses or {}).get(name, {status})
        if answers != 1 or not closed or not any(first.startswith(f"HTTP/1.1 {s} ") for s in allowed):
            failures.append(f"{name}: {answers} answers, closed={closed}, first {first!r}")
    assert not failures, "\n".join(failures)


@pytest.fixture(scope="module")
def store(built_store) -> Path:
    return built_store(CASES / "inference" / "shop.json", links=False)


def test_the_endpoint_answers_an_ambiguous_request_once_and_closes(store: Path) -> None:
    with serving(store) as base:
        port = int(base.rsplit(":", 1)[1])
        _check(port, _probes(port, "GET", "/query?query=ASK%7B%7D", ""))
        form = "Content-Type: application/x-www-form-urlencoded\r\n"
        _check(port, _probes(port, "POST", "/query", form))
        chunked_only = (
            f"GET /status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
            + f"{len(_hidden(port)):x}\r\n".encode()
            + _hidden(port)
            + b"\r\n0\r\n\r\n"
        )
        _check(port, {"chunked alone": (chunked_only, 411)})
        assert get(base + "/status")["backend"]["state"] == "up"  # and the reading thread still reads
        # A plain keep-alive pair of requests is still two answers on one connection.
        plain = _hidden(port) + _hidden(port)
        answer, _ = _exchange(port, plain, timeout=3)
        assert answer.count(b"HTTP/1.1 200 ") == 2


@contextmanager
def _mcp_http(store: Path, tmp_path: Path):
    port = free_port()
    environment = {**os.environ, "TOOLKG_CONFIG_DIR": str(tmp_path / "config"), "TOOLKG_MCP_TOKEN": TOKEN}
    process = subprocess.Popen(
        [str(TOOLKG), "mcp", "--store", str(store), "--transport", "http", "--bind", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=environment,
    )
    try:
        wait_listening(port, process, 60)
        yield port
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_toolkg_mcp_over_http_answers_an_ambiguous_request_once_and_closes(store: Path, tmp_path: Path) -> None:
    with _mcp_http(store, tmp_path) as port:
        headers = (
            f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n"
        )
        _check(port, _probes(port, "POST", "/mcp", headers))
