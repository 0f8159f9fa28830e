"""`toolkg serve`'s SPARQL backend cannot be reached around the endpoint's checks (issue 40, hole 4).

The backend used to be `oxigraph serve-read-only` on a loopback port of its own: a client that found the port
(in /proc, or in the child's command line) could query it with any Host and have it send SERVICE requests to
other local ports. Here an attacker on the machine looks for that port the way one would, and tries."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import CASES
from tests.support.endpoint_helpers import free_port, request, serve_process

ASK = "ASK { ?s ?p ?o }"


@pytest.fixture(scope="module")
def store(built_store):
    return built_store(CASES / "inference" / "shop.json", links=False)


@pytest.fixture
def recorder():
    """A local HTTP server that records every request it gets: where a SERVICE request would land."""
    hits: list[str] = []

    class Record(BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(f"{self.command} {self.path}")
            self.send_response(500)
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Record)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/sparql", hits
    finally:
        server.shutdown()
        server.server_close()


# -- what an attacker on the machine can read ----------------------------------------------------------------


def _process_tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            link = os.readlink(fd)
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    return inodes


def _listening_tcp_ports(pids: list[int]) -> set[int]:
    """Ports the processes listen on: their socket inodes looked up in /proc/net/tcp{,6} (state 0A: LISTEN)."""
    inodes = set().union(*(_socket_inodes(pid) for pid in pids))
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def _ports_in_command_lines(pids: list[int]) -> set[int]:
    """``--bind HOST:PORT`` (or ``--bind=``) in the processes' command lines, as `ps` shows them."""
    ports = set()
    for pid in pids:
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        for i, arg in enumerate(args):
            value = args[i + 1] if arg == "--bind" and i + 1 < len(args) else arg.removeprefix("--bind=")
            if value != arg or arg == "--bind":
                port = value.rsplit(":", 1)[-1]
                if port.isdigit():
                    ports.add(int(port))
    return ports


def _named_unix_sockets(pids: list[int]) -> list[str]:
    """Unix sockets of the processes that have a name (a path or an abstract @name): something to connect to."""
    inodes = set().union(*(_socket_inodes(pid) for pid in pids))
    named = []
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[6] in inodes:
            named.append(fields[7])
    return named


def _http(port: int, raw: bytes) -> str:
    """Send a raw request to 127.0.0.1:port; the status line's code, or why nothing answered."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(raw)
            answer = conn.recv(65536).decode(errors="replace")
    except OSError as exc:
        return f"no answer ({exc.__class__.__name__})"
    return answer.split(" ", 2)[1] if answer.startswith("HTTP/") else f"no HTTP answer ({answer[:40]!r})"


def _attacks(port: int, service_target: str) -> dict[str, str]:
    """What a page rebound to 127.0.0.1 (Host: evil.example) or a local process sends to a SPARQL port."""
    rebound = urllib.parse.urlencode({"query": ASK})
    service = urllib.parse.urlencode({"query": f"SELECT * WHERE {{ SERVICE <{service_target}> {{ ?s ?p ?o }} }}"})
    return {
        "query with Host evil.example": _http(
            port, f"GET /query?{rebound} HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n".encode()
        ),
        "SERVICE to a local port": _http(
            port,
            (
                f"POST /query HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\nContent-Type: "
                f"application/x-www-form-urlencoded\r\nContent-Length: {len(service)}\r\n\r\n{service}"
            ).encode(),
        ),
    }


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc as an attacker would")
def test_the_backend_has_no_address_to_attack(store, recorder):
    target, hits = recorder
    with serve_process(store) as (base, process):
        public = int(base.rsplit(":", 1)[1])
        tree = _process_tree(process.pid)
        assert len(tree) >= 2, "the endpoint runs its SPARQL backend as a process of its own"
        found = (_listening_tcp_ports(tree) | _ports_in_command_lines(tree)) - {public}
        answers = {port: _attacks(port, target) for port in sorted(found)}
        assert all(code != "200" for attacks in answers.values() for code in attacks.values()), answers
        assert hits == [], f"a SERVICE query sent straight to the backend reached {target}: {hits}"
        assert found == set(), f"the endpoint's processes listen on more than {public}: {answers}"
        assert _named_unix_sockets(tree) == []
        # The public port, attacked the same way, refuses both.
        assert _attacks(public, target) == {"query with Host evil.example": "403", "SERVICE to a local port": "403"}
        assert request(base + "/query?" + urllib.parse.urlencode({"query": ASK}), method="GET")[0] == 200
    assert hits == []


def test_the_backend_refuses_service_itself(store, recorder):
    """Defence in depth: a SERVICE query that reaches the backend unchecked is refused there too."""
    from toolkg.store.snapshots import current_snapshot
    from toolkg.store.sparql_sandbox import Backend

    target, hits = recorder
    snapshot = current_snapshot(store)
    assert snapshot is not None
    backend = Backend.start(snapshot)
    try:
        query = f"SELECT * WHERE {{ SERVICE <{target}> {{ ?s ?p ?o }} }}"
        status, body, _ = backend.ask(query, time.monotonic() + 10)
        assert status == 403 and b"SERVICE" in body, (status, body)
        assert backend.ask(ASK, time.monotonic() + 10)[:2] == (200, b'{"head":{},"boolean":true}')
    finally:
        backend.stop(grace=0)
    assert hits == []


@pytest.mark.skipif(sys.platform != "linux", reason="a seccomp filter")
def test_without_federation_the_backend_process_cannot_open_an_internet_socket(recorder):
    """The second layer: past the lexer, pyoxigraph's own SERVICE client finds no network to use. Without the
    filter (the control run) the same query reaches the recorder."""
    target, hits = recorder
    script = f"""
import socket, sys
from pyoxigraph import QueryResultsFormat, Store
from toolkg.store.sparql_sandbox_worker import forbid_internet_sockets
if sys.argv[1] == "filtered":
    assert forbid_internet_sockets()
try:
    Store().query("SELECT * WHERE {{ SERVICE <{target}> {{ ?s ?p ?o }} }}").serialize(format=QueryResultsFormat.JSON)
    print("SERVICE ran")
except OSError as exc:
    print("SERVICE failed:", exc)
a, b = socket.socketpair()
print("unix sockets work")
"""
    control = subprocess.run([sys.executable, "-c", script, "control"], capture_output=True, text=True, timeout=60)
    assert control.returncode == 0 and hits, (control.stdout, control.stderr)  # the attack is real
    hits.clear()
    run = subprocess.run([sys.executable, "-c", script, "filtered"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "SERVICE failed" in run.stdout and "unix sockets work" in run.stdout, run.stdout
    assert hits == []


def test_the_ui_files_come_out_of_the_oxigraph_binary_whole():
    """The UI's YASGUI files as the `oxigraph` binary itself serves them (an in-memory store, for this test)."""
    from toolkg.serve.assets import ASSETS, asset, oxigraph_binary

    port = free_port()
    server = subprocess.Popen(
        [oxigraph_binary(), "serve", "--bind", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        for path in ASSETS:
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
                        served, served_type = response.read(), response.headers["Content-Type"]
                    break
                except OSError:
                    assert time.monotonic() < deadline, "oxigraph serve did not start"
                    time.sleep(0.1)
            assert asset(path) == (served_type, served), path
    finally:
        server.terminate()
        server.wait(10)
