"""`toolkg serve` attacked over HTTP the way issue 18 found it broken: each attack is a test, and after each the
endpoint still answers. The query guard's own tests are in test_query_guard.py."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import CASES, TOOLKG
from tests.support.endpoint_helpers import free_port, get, request, serve_process, serving, sparql

COUNT_TOOLS = "SELECT (COUNT(DISTINCT ?t) AS ?n) WHERE { ?t a tk:Tool }"  # no PREFIX: the endpoint knows tk:


@pytest.fixture(scope="module")
def store(built_store):
    """The shop catalog's store (the session's shared build: the endpoint only reads it)."""
    return built_store(CASES / "inference" / "shop.json", links=False)


def _raw(base: str, data: bytes, timeout: float = 10) -> str:
    """Send raw bytes to the endpoint, return what it answered (status line first)."""
    host, port = urllib.parse.urlsplit(base).netloc.split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as conn:
        conn.sendall(data)
        chunks = []
        try:
            while chunk := conn.recv(65536):
                chunks.append(chunk)
        except TimeoutError:
            pass
    return b"".join(chunks).decode(errors="replace")


class _Recorder(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):
        self.hits.append(self.path)
        self.send_response(500)
        self.end_headers()

    do_POST = do_GET

    def log_message(self, *args):
        pass


def test_service_is_refused_unless_allowed(store, cli):
    """SERVICE would make the backend fetch any URL (server-side request forgery): here a listener on
    127.0.0.1 records whether anything came."""
    listener = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=listener.serve_forever, daemon=True).start()
    target = f"http://127.0.0.1:{listener.server_address[1]}/sparql"
    query = f"SELECT * WHERE {{ SERVICE <{target}> {{ ?s ?p ?o }} }}"
    try:
        with serving(store) as base:
            code, body, _ = request(base + "/query", urllib.parse.urlencode({"query": query}).encode())
            assert code == 403 and "SERVICE" in body and "--allow-federation" in body
            get_code = request(base + "/query?" + urllib.parse.urlencode({"query": query}), method="GET")[0]
            assert get_code == 403 and _Recorder.hits == []
            assert get(base + "/status")["federation"] is False
        with serving(store, "--allow-federation") as base:
            request(base + "/query", urllib.parse.urlencode({"query": query}).encode())
            assert _Recorder.hits, "with --allow-federation the query reaches the named endpoint"
    finally:
        listener.shutdown()
    refused = cli("query", "--store", str(store), query)
    assert refused.returncode == 2 and "SERVICE" in refused.stderr and refused.stderr.count("\n") == 1


def test_a_query_past_the_timeout_is_504_never_a_truncated_200(store):
    runaway = "SELECT ?a (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l } GROUP BY ?a"
    with serving(store, "--timeout", "1") as base:
        for accept in ("application/sparql-results+json", "text/csv", "application/sparql-results+xml"):
            started = time.monotonic()
            code, body, _ = request(
                base + "/query", urllib.parse.urlencode({"query": runaway}).encode(), headers={"Accept": accept}
            )
            assert code == 504 and "timed out after 1s" in body, (accept, code, body[:200])
            assert time.monotonic() - started < 8
            assert sparql(base, COUNT_TOOLS) == [{"n": "20"}]
        # A query that streams rows from the start: the 200 header and the first rows come at once, so only a
        # proxy that reads the whole answer first can still refuse it (504 at the deadline, or 413 past 64 MiB).
        streaming = "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"
        code, body, _ = request(base + "/query", urllib.parse.urlencode({"query": streaming}).encode())
        assert (code, body.split(" ")[0]) in ((504, "query"), (413, "result")), (code, body[:200])  # never a 200
        backend = get(base + "/status")["backend"]
        assert backend["state"] == "up" and backend["restarts"] >= 1
        assert "timeout" in backend["last_restart"]["reason"]


def test_malformed_requests_get_a_4xx_and_no_traceback(store):
    with serve_process(store) as (base, process):
        cases = {
            b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/sparql-query\r\nContent-Length: abc\r\n\r\n"
            b"ASK {}": "400",
            b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/sparql-query\r\nContent-Length: -5\r\n\r\n"
            b"ASK {}": "400",
            b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/sparql-query\r\n"
            b"Content-Length: 1000000000\r\n\r\nASK {}": "413",
            b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/sparql-query\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n6\r\nASK {}\r\n0\r\n\r\n": "411",
            b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/sparql-query\r\n\r\n": "411",
            b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: text/plain\r\nContent-Length: 6\r\n\r\nASK {}": "415",
            b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            b"Content-Length: 11\r\n\r\nquery=%FF%FE": "400",
            b"GET /query HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n": "400",
            b"GET /query?query=ASK%7B%7D&query=ASK%7B%7D HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n": "400",
            b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            b"Content-Length: 16\r\n\r\nupdate=CLEAR+ALL": "403",
            b"GARBAGE\r\n\r\n": "400",
        }
        for data, status in cases.items():
            answer = _raw(base, data.replace(b"Host: 127.0.0.1\r\n", b"Host: 127.0.0.1\r\nConnection: close\r\n", 1))
            assert answer.split(" ")[1] == status, (data[:60], answer[:200])
            body = answer.split("\r\n\r\n", 1)[1]
            assert body.strip() and body.strip().count("\n") == 0, body  # one line says why
        # A body shorter than its Content-Length, then the client hangs up; and one that just stops.
        _raw(base, b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 500\r\n\r\nquery=ASK", timeout=1)
        with socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1]))) as conn:
            conn.sendall(b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 50\r\n\r\nq")
        assert sparql(base, COUNT_TOOLS) == [{"n": "20"}]
    stderr = process.stderr.read()
    assert "Traceback" not in stderr, stderr


def _backend(base: str) -> dict:
    """/status's backend part, whatever its HTTP status (503 while the backend is down or unresponsive)."""
    code, body, _ = request(base + "/status", method="GET")
    backend = json.loads(body)["backend"]
    assert (code == 200) == (backend["state"] == "up"), (code, backend)
    return backend


def test_a_dead_or_wedged_backend_is_replaced_and_status_tells(store):
    with serving(store) as base:
        first = _backend(base)
        os.kill(first["pid"], signal.SIGKILL)  # what a stack overflow does to it, less politely
        deadline = time.monotonic() + 15
        while (backend := _backend(base))["pid"] == first["pid"] or backend["state"] != "up":
            assert time.monotonic() < deadline, backend
            time.sleep(0.2)
        assert backend["restarts"] == 1 and "SIGKILL" in backend["last_restart"]["reason"]
        assert sparql(base, COUNT_TOOLS) == [{"n": "20"}]

        os.kill(backend["pid"], signal.SIGSTOP)  # alive, answering nothing
        code, body, _ = request(base + "/status", method="GET")
        assert code == 503 and json.loads(body)["backend"]["state"] == "unresponsive"
        deadline = time.monotonic() + 40
        while (now := _backend(base))["pid"] == backend["pid"] or now["state"] != "up":
            assert time.monotonic() < deadline, now
            time.sleep(0.5)
        assert now["state"] == "up" and "did not answer" in now["last_restart"]["reason"]
        assert sparql(base, COUNT_TOOLS) == [{"n": "20"}]
    # the endpoint stopped right after the restart: the wedged worker went with it, not left stopped behind
    # (a stopped process acts on no SIGTERM, its own or its dead parent's)
    deadline = time.monotonic() + 15
    while _running(backend["pid"]):
        assert time.monotonic() < deadline, f"the wedged backend {backend['pid']} is still there"
        time.sleep(0.2)


def _running(pid: int) -> bool:
    """Whether a process exists and is not a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def test_twenty_concurrent_clients_are_all_answered(store):
    with serving(store) as base:

        def client(i: int) -> list[int]:
            return [len(sparql(base, COUNT_TOOLS)) for _ in range(10)]

        with ThreadPoolExecutor(20) as pool:
            assert [n for answers in pool.map(client, range(20)) for n in answers] == [1] * 200


def test_non_loopback_binds_need_allow_remote(store, cli):
    port = free_port()
    refused = cli("serve", "--store", str(store), "--bind", f"0.0.0.0:{port}")
    assert refused.returncode == 2 and "--allow-remote" in refused.stderr and refused.stderr.count("\n") == 1
    # A server that keeps running while the test talks to it: Popen, not the cli fixture (which waits for the end).
    process = subprocess.Popen(
        [str(TOOLKG), "serve", "--store", str(store), "--bind", f"0.0.0.0:{port}", "--allow-remote"],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None  # piped
    try:
        warning = process.stderr.readline()
        assert "warning" in warning and "no authentication" in warning
        deadline = time.monotonic() + 30
        while True:
            try:
                assert get(f"http://127.0.0.1:{port}/status")["backend"]["state"] == "up"
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
    finally:
        process.terminate()
        process.wait(10)


def test_the_vocabulary_routes(store):
    """The prefixes known without declarations, saved queries rendered with parameters, the ontology's pages."""
    with serving(store) as base:
        prefixes = get(base + "/prefixes")
        assert prefixes["tk"] == "https://w3id.org/toolkg/ontology#"
        assert sparql(base, COUNT_TOOLS) == [{"n": "20"}]
        rendered = get(base + "/saved-queries/render?name=server-tools&server=shop")
        assert 'VALUES ?server { "shop" }' in rendered["query"] and len(sparql(base, rendered["query"])) == 20
        code, body, _ = request(base + "/saved-queries/render?name=server-tools&tool=x", method="GET")
        assert code == 400 and "no parameter tool" in json.loads(body)["error"]
        code, body, headers = request(base + "/ontology", method="GET")
        assert code == 200 and "text/html" in headers["Content-Type"] and "dependsOn" in body
        context = get(base + "/ontology/context.jsonld")
        assert context["@context"]["tk"] == prefixes["tk"]


def test_requests_a_web_page_could_make_are_refused(store):
    """A page in the user's browser can POST a form to 127.0.0.1, or reach it under its own name by DNS
    rebinding: a foreign Origin or a non-loopback Host is refused; the endpoint's own page is not."""
    form = urllib.parse.urlencode({"query": "ASK {}"}).encode()
    with serving(store) as base:
        code, body, _ = request(base + "/query", form, headers={"Origin": "https://evil.example"})
        assert code == 403 and "cross-site" in body
        code, body, _ = request(base + "/query", form, headers={"Host": "rebound.example:7878"})
        assert code == 403 and "Host" in body
        own = urllib.parse.urlsplit(base).netloc
        code, body, _ = request(base + "/query", form, headers={"Origin": base, "Accept": "application/json"})
        assert code == 200 and json.loads(body)["boolean"] is True, own
