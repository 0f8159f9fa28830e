"""`toolkg serve`: a read-only SPARQL 1.1 endpoint with a browser UI over a store's snapshots.

Consistency while a build runs: Oxigraph documents a read-only open beside a live writer as
undefined behaviour, so the endpoint never opens the database a build writes. Every build
publishes a snapshot (``store/snapshots.py``); the endpoint runs ``oxigraph serve-read-only`` on
the current one behind a small proxy that owns the public address. When a build publishes a new
snapshot, a second Oxigraph starts on it, the proxy switches new requests to it, and the old one
is stopped once its in-flight queries finish. Queries never see a half-written store, and the
address never changes.

What the proxy adds to Oxigraph's own server: updates and Graph Store writes are refused (403)
before they reach anything; the root page is Oxigraph's YASGUI (served from its binary, no CDN)
plus a panel of the saved analyst queries; ``/status`` says which snapshot is being served; ``/search``
answers tool search as JSON (``toolkg.toolsearch``: the same answers as ``toolkg mcp``'s search_tools).
"""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from toolkg.display import one_line
from toolkg.errors import ConfigError, NotFoundError, StoreError
from toolkg.store.saved_queries import saved_queries
from toolkg.store.snapshots import current_snapshot, ensure_snapshot

QUERY_PATHS = ("/query", "/sparql")
ASSETS = ("/yasgui.min.js", "/yasgui.min.css", "/logo.svg")
WRITE_PATHS = ("/update", "/store")
POLL_SECONDS = 1.0
# Backends are started from this one thread, which lives as long as the process (see _die_with_parent).
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="oxigraph-spawner")


def oxigraph_binary() -> str:
    """The `oxigraph` server CLI from the `oxigraph` package, next to this Python first."""
    beside = Path(sys.executable).parent / "oxigraph"
    found = str(beside) if beside.exists() else shutil.which("oxigraph")
    if not found:
        raise ConfigError("the 'oxigraph' server command is missing (pip install oxigraph)")
    return found


def _die_with_parent() -> None:
    """Run in the child before exec: Linux sends it SIGTERM when the thread that started it ends,
    which is why every backend is started from the one long-lived ``_SPAWNER`` thread."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except OSError:  # not Linux: the endpoint's own shutdown path still stops it
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Backend:
    """One `oxigraph serve-read-only` process answering from one snapshot."""

    snapshot: Path
    port: int
    process: subprocess.Popen
    started: float = field(default_factory=time.time)
    in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(cls, snapshot: Path, timeout_s: int) -> Backend:
        for _ in range(5):  # another process may take the free port before Oxigraph binds it
            port = _free_port()
            process = _SPAWNER.submit(
                subprocess.Popen,
                [
                    oxigraph_binary(),
                    "serve-read-only",
                    "--location",
                    str(snapshot),
                    "--bind",
                    f"127.0.0.1:{port}",
                    "--union-default-graph",
                    "--timeout-s",
                    str(timeout_s),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                preexec_fn=_die_with_parent,
            ).result()
            backend = cls(snapshot, port, process)
            if backend._wait_ready(15.0):
                return backend
            backend.stop(grace=0)
        raise StoreError(f"oxigraph could not serve {snapshot}: {backend.error()}")

    def _wait_ready(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/query?query=ASK%7B%7D", headers={"Accept": "application/sparql-results+json"})
                ok = conn.getresponse().status == 200
                conn.close()
                if ok:
                    return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def error(self) -> str:
        if self.process.poll() is None or self.process.stderr is None:
            return "did not answer in time"
        lines = self.process.stderr.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exited with {self.process.returncode}"

    def stop(self, grace: float) -> None:
        """Stop once in-flight requests are done (or after ``grace`` seconds)."""
        deadline = time.monotonic() + grace
        while self.in_flight and time.monotonic() < deadline:
            time.sleep(0.05)
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()


class Endpoint:
    """The proxy's state: the backend in use, swapped when a new snapshot is published."""

    def __init__(self, store_dir: str | Path, timeout_s: int = 30) -> None:
        self.store_dir = Path(store_dir)
        self.timeout_s = timeout_s
        self.backend = Backend.start(ensure_snapshot(self.store_dir), timeout_s)
        self.swaps = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._assets: dict[str, tuple[str, bytes]] = {}
        self._search = None  # toolkg.toolsearch.ToolSearch, when /search is first asked
        self._watcher = threading.Thread(target=self._watch, name="snapshot-watcher", daemon=True)
        self._watcher.start()

    def acquire(self) -> Backend:
        with self._lock:
            backend = self.backend
            with backend.lock:
                backend.in_flight += 1
            return backend

    @staticmethod
    def release(backend: Backend) -> None:
        with backend.lock:
            backend.in_flight -= 1

    def _watch(self) -> None:
        while not self._stopping.wait(POLL_SECONDS):
            latest = current_snapshot(self.store_dir)
            if latest is None or latest == self.backend.snapshot:
                continue
            try:
                fresh = Backend.start(latest, self.timeout_s)
            except StoreError as exc:  # keep serving the old snapshot; say why once per attempt
                print(f"toolkg serve: staying on {self.backend.snapshot.name}: {exc}", file=sys.stderr)
                continue
            self._replace(fresh)
            print(f"toolkg serve: now serving snapshot {latest.name}", file=sys.stderr, flush=True)

    def _replace(self, fresh: Backend) -> None:
        with self._lock:
            old, self.backend = self.backend, fresh
            self.swaps += 1
        threading.Thread(target=old.stop, args=(self.timeout_s + 5,), daemon=True).start()

    def recycle(self, backend: Backend) -> None:
        """A query outran the timeout: Oxigraph's own timeout does not stop every query (aggregates
        keep computing), so the process running it is replaced by a fresh one on the same snapshot."""
        with self._lock:
            if backend is not self.backend:
                return  # already swapped away; it stops by itself
            try:
                fresh = Backend.start(backend.snapshot, self.timeout_s)
            except StoreError as exc:
                print(f"toolkg serve: could not restart the SPARQL backend: {exc}", file=sys.stderr)
                return
            old, self.backend = self.backend, fresh
        threading.Thread(target=old.stop, args=(self.timeout_s,), daemon=True).start()

    def status(self) -> dict[str, object]:
        backend = self.backend
        return {
            "store": str(self.store_dir.resolve()),
            "snapshot": backend.snapshot.name,
            "serving_since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(backend.started)),
            "swaps": self.swaps,
            "query_timeout_s": self.timeout_s,
            "read_only": True,
        }

    def asset(self, path: str) -> tuple[str, bytes]:
        """YASGUI's files, fetched once from Oxigraph's binary."""
        if path not in self._assets:
            backend = self.acquire()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", backend.port, timeout=10)
                conn.request("GET", path)
                response = conn.getresponse()
                self._assets[path] = (response.getheader("Content-Type", "application/octet-stream"), response.read())
                conn.close()
            finally:
                self.release(backend)
        return self._assets[path]

    def search(self, query: str, k: int, steps: list[str]) -> dict[str, object]:
        """``/search``: ranked tools with what to call first (toolkg.toolsearch), loaded on first use."""
        with self._lock:
            if self._search is None:
                from toolkg.toolsearch.service import ToolSearch

                self._search = ToolSearch(self.store_dir)
        tools = self._search.search_tools(query, k, steps)
        return {"query": query, "steps": steps, "snapshot": self._search.snapshot, "tools": tools}

    def close(self) -> None:
        self._stopping.set()
        self.backend.stop(grace=0)
        if self._search is not None:
            self._search.close()


def _page() -> bytes:
    return (resources.files("toolkg.serve") / "ui" / "index.html").read_bytes()


class Handler(BaseHTTPRequestHandler):
    endpoint: Endpoint  # set on the subclass serve() makes
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args) -> None:  # quiet: one line per request is noise here
        pass

    def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _refuse(self) -> None:
        message = "toolkg serve is a read-only endpoint: SPARQL updates and Graph Store writes are refused\n"
        self._send(403, message.encode(), "text/plain; charset=utf-8")

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path in ("/", "/index.html"):
            self._send(200, _page(), "text/html; charset=utf-8")
        elif path == "/saved-queries":
            body = json.dumps([q.as_json() for q in saved_queries().values()], ensure_ascii=False).encode()
            self._send(200, body, "application/json")
        elif path == "/status":
            self._send(200, json.dumps(self.endpoint.status()).encode(), "application/json")
        elif path == "/search":
            self._search()
        elif path in ASSETS:
            content_type, body = self.endpoint.asset(path)
            self._send(200, body, content_type, {"Cache-Control": "max-age=3600"})
        elif path in QUERY_PATHS:
            self._proxy()
        elif path in WRITE_PATHS:
            self._refuse()
        else:
            self._send(404, b"not found\n", "text/plain")

    do_HEAD = do_GET

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        if path in QUERY_PATHS:
            self._proxy()
        elif path in WRITE_PATHS:
            self._refuse()
        else:
            self._send(404, b"not found\n", "text/plain")

    def do_PUT(self) -> None:
        self._refuse()

    do_DELETE = do_PATCH = do_PUT

    def _search(self) -> None:
        """GET /search?q=TEXT[&k=N][&step=TEXT...]: JSON, or 400 with {"error": one line}."""
        from toolkg.errors import ToolkgError

        params = parse_qs(urlsplit(self.path).query)
        try:
            k = int((params.get("k") or ["5"])[0])
            answer = self.endpoint.search((params.get("q") or [""])[0], k, params.get("step") or [])
        except (ValueError, ToolkgError) as exc:
            body = json.dumps({"error": one_line(str(exc))}).encode()
            return self._send(400 if not isinstance(exc, NotFoundError) else 404, body, "application/json")
        self._send(200, json.dumps(answer, ensure_ascii=False).encode(), "application/json")

    def _proxy(self) -> None:
        """Forward a SPARQL query to the current backend and relay its answer."""
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if self.command == "POST" and "application/sparql-update" in (self.headers.get("Content-Type") or ""):
            return self._refuse()
        headers = {k: v for k, v in self.headers.items() if k.lower() in ("accept", "content-type")}
        backend = self.endpoint.acquire()
        timed_out = False
        try:
            path = "/query" + (f"?{urlsplit(self.path).query}" if urlsplit(self.path).query else "")
            conn = http.client.HTTPConnection("127.0.0.1", backend.port, timeout=self.endpoint.timeout_s + 1)
            conn.request(self.command, path, body=body, headers=headers)
            response = conn.getresponse()
            payload = response.read()
            conn.close()
        except TimeoutError:
            timed_out = True
        except OSError as exc:
            return self._send(502, f"SPARQL backend unavailable: {exc}\n".encode(), "text/plain")
        finally:
            self.endpoint.release(backend)
        if timed_out:
            self.endpoint.recycle(backend)
            message = f"query timed out after {self.endpoint.timeout_s}s (toolkg serve --timeout)\n"
            return self._send(504, message.encode(), "text/plain; charset=utf-8")
        self._send(
            response.status,
            payload,
            response.getheader("Content-Type", "application/octet-stream"),
            {"X-Toolkg-Snapshot": backend.snapshot.name},
        )


def parse_bind(bind: str) -> tuple[str, int]:
    host, sep, port = bind.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"--bind takes HOST:PORT, not {bind!r}")
    return host or "127.0.0.1", int(port)


def make_server(store_dir: str | Path, bind: str = "127.0.0.1:7878", timeout_s: int = 30) -> ThreadingHTTPServer:
    """The endpoint's HTTP server (not yet serving); ``server.endpoint.close()`` stops Oxigraph."""
    host, port = parse_bind(bind)
    endpoint = Endpoint(store_dir, timeout_s)
    handler = type("BoundHandler", (Handler,), {"endpoint": endpoint})
    try:
        server = ThreadingHTTPServer((host, port), handler)
    except OSError as exc:
        endpoint.close()
        raise ConfigError(f"cannot listen on {bind}: {exc.strerror or exc}") from None
    server.daemon_threads = True
    server.endpoint = endpoint  # type: ignore[attr-defined]
    return server
