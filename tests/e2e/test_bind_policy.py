"""Which addresses `toolkg serve` and `toolkg mcp --transport http` listen on, and which Host and Origin they
answer, attacked as issue 40 found them: `--bind 127.0.0.2` was taken for local (it is not 127.0.0.1 or ::1), and
on that bind `Host: evil.example` got a 200, so a page that rebinds its own name to the address reached the server.

Each server runs as the real CLI in a subprocess; every request goes over a real socket to a loopback address
(127.0.0.2 is loopback on Linux, so an --allow-remote bind can be tested without leaving the machine).
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import time
from contextlib import contextmanager

import pytest

from tests.conftest import CASES, TOOLKG
from tests.support.endpoint_helpers import free_port

TOKEN = "bind-policy-token-" + os.urandom(8).hex()
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
).encode()

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store(built_store):
    return built_store(CASES / "inference" / "shop.json", links=False)


def _ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def _start(command: str, store, bind: str, *flags: str) -> subprocess.Popen:
    args = [str(TOOLKG), command, "--store", str(store), "--bind", bind, *flags]
    if command == "mcp":
        args += ["--transport", "http"]
    env = {**os.environ, "TOOLKG_MCP_TOKEN": TOKEN}
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)


@contextmanager
def running(command: str, store, bind: str, address: str, port: int, *flags: str):
    """The server started on ``bind``, once ``address``:``port`` accepts connections; stopped after."""
    process = _start(command, store, bind, *flags)
    assert process.stderr is not None  # piped by _start
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"toolkg {command} --bind {bind} exited: {process.stderr.read()}")
            try:
                socket.create_connection((address, port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, f"nothing listening on {address}:{port}"
                time.sleep(0.2)
        yield process
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def ask(command: str, address: str, port: int, host: str, origin: str | None = None) -> tuple[int, str]:
    """One request with this Host (and Origin): a SPARQL ASK to serve, an MCP initialize with the token to mcp."""
    headers = {"Host": host}
    if origin:
        headers["Origin"] = origin
    if command == "serve":
        path, body = "/query", b"query=ASK%20%7B%7D"
        headers |= {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
    else:
        path, body = "/mcp", INITIALIZE
        headers |= {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {TOKEN}",
        }
    conn = http.client.HTTPConnection(address, port, timeout=30)
    try:
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode(errors="replace")
    finally:
        conn.close()


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_a_loopback_address_other_than_127_0_0_1_needs_allow_remote(store, command) -> None:
    """127.0.0.2 is a loopback address, but not the one clients and the checks take for "this machine"."""
    port = free_port()
    args = [str(TOOLKG), command, "--store", str(store), "--bind", f"127.0.0.2:{port}"]
    if command == "mcp":
        args += ["--transport", "http"]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        process.wait(45)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)
        said = process.communicate(timeout=20)[1]
        pytest.fail(f"toolkg {command} listens on 127.0.0.2 without --allow-remote: {said}")
    assert process.stderr is not None  # piped above
    stderr = process.stderr.read()
    assert process.returncode == 2, stderr
    assert stderr.count("\n") == 1 and "127.0.0.2" in stderr and "--allow-remote" in stderr


BIND_FORMS = [
    # (bind, the address to connect to, flags, a Host the server must accept)
    ("127.0.0.1", "127.0.0.1", (), "127.0.0.1"),
    ("localhost", "127.0.0.1", (), "localhost"),
    ("[::1]", "::1", (), "[::1]"),
    ("127.0.0.2", "127.0.0.2", ("--allow-remote",), "127.0.0.2"),
    ("127.0.0.2", "127.0.0.2", ("--allow-remote", "--allow-host", "toolkg.test"), "toolkg.test"),
    ("0.0.0.0", "127.0.0.1", ("--allow-remote",), "127.0.0.1"),
]


@pytest.mark.parametrize("command", ["serve", "mcp"])
@pytest.mark.parametrize(
    ("bind", "address", "flags", "own"), BIND_FORMS, ids=[" ".join(f[:1] + f[2]) for f in BIND_FORMS]
)
def test_a_foreign_host_or_origin_is_refused_on_every_bind(store, command, bind, address, flags, own) -> None:
    if ":" in address and not _ipv6():
        pytest.skip("no IPv6 loopback here")
    port = free_port()
    with running(command, store, f"{bind}:{port}", address, port, *flags):
        status, body = ask(command, address, port, f"{own}:{port}")
        assert status == 200, body
        for host in ("evil.example", f"evil.example:{port}", "rebound.example.:80", "127.0.0.1.evil.example"):
            status, body = ask(command, address, port, host)
            assert status == 403 and "Host" in body and body.count("\n") <= 1, (host, status, body)
        status, body = ask(command, address, port, f"{own}:{port}", origin="https://evil.example")
        assert status == 403 and "cross-site" in body, (status, body)
        status, body = ask(command, address, port, f"{own}:{port}", origin="null")
        assert status == 403, (status, body)
        status, body = ask(command, address, port, f"{own}:{port}", origin=f"http://{own}:{port}")
        assert status == 200, body
