"""The Oxigraph processes behind `toolkg serve`: started on a snapshot, watched, replaced.

Oxigraph answers the queries; this module keeps one answering. A backend is replaced when a build publishes a
new snapshot (queries in flight on the old one finish first), when its process dies (a query that overflows its
stack ends it: the guard in ``toolkg.store.query_guard`` refuses the shapes known to, but the endpoint must not
depend on knowing them all), when it stops answering a health probe (wedged), and when a query outruns the
timeout (Oxigraph's own timeout does not stop every query: aggregates keep computing). ``status()`` says which
of these happened last, so ``/status`` tells the truth about the backend rather than about the proxy.
"""

from __future__ import annotations

import http.client
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from toolkg.errors import ConfigError, StoreError
from toolkg.store.snapshots import current_snapshot, ensure_snapshot

POLL_SECONDS = 1.0  # how often the watcher looks for a new snapshot and a dead process
PROBE_EVERY_SECONDS = 5.0  # how often an idle-or-busy backend is asked ASK {}
PROBE_TIMEOUT_SECONDS = 5.0
PROBE_FAILURES_TO_REPLACE = 2  # one slow answer under load is not a wedge; two in a row are
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


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


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
                    # Later than the proxy's own deadline: Oxigraph ends a timed-out query by closing a 200
                    # stream early, which would look like a complete (truncated) answer. The proxy answers 504
                    # at its deadline and replaces the backend instead.
                    "--timeout-s",
                    str(timeout_s + 5),
                ],
                stdout=subprocess.DEVNULL,
                # A file, not a pipe: Oxigraph logs every failed query there, and a pipe nobody reads fills up
                # and blocks it. Its last line says why a start failed.
                stderr=tempfile.TemporaryFile(),
                preexec_fn=_die_with_parent,
            ).result()
            backend = cls(snapshot, port, process)
            if backend._wait_ready(15.0):
                return backend
            reason = backend.error()
            backend.stop(grace=0)
        raise StoreError(f"oxigraph could not serve {snapshot}: {reason}")

    def alive(self) -> bool:
        return self.process.poll() is None

    def probe(self, timeout: float) -> bool:
        """Whether it answers ``ASK {}`` within ``timeout`` seconds."""
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
            conn.request("GET", "/query?query=ASK%7B%7D", headers={"Accept": "application/sparql-results+json"})
            ok = conn.getresponse().status == 200
            conn.close()
            return ok
        except (OSError, http.client.HTTPException):
            return False

    def _wait_ready(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self.alive():
                return False
            if self.probe(2):
                return True
            time.sleep(0.1)
        return False

    def error(self) -> str:
        if self.alive() or self.process.stderr is None or self.process.stderr.closed:
            return "did not answer in time"
        self.process.stderr.seek(0)
        lines = self.process.stderr.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exited with {self.process.returncode}"

    def exit_reason(self) -> str:
        code = self.process.returncode
        if code is not None and code < 0:
            import signal

            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            overflow = "; a query overflowed its stack?" if name in ("SIGSEGV", "SIGABRT", "SIGBUS") else ""
            return f"the SPARQL backend died ({name}{overflow})"
        return f"the SPARQL backend exited with code {code}"

    def stop(self, grace: float) -> None:
        """Stop once in-flight requests are done (or after ``grace`` seconds)."""
        deadline = time.monotonic() + grace
        while self.in_flight and time.monotonic() < deadline and self.alive():
            time.sleep(0.05)
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()


class Backends:
    """The backend in use, and a watcher that replaces it when it is stale, dead or wedged."""

    def __init__(self, store_dir: str | Path, timeout_s: int = 30) -> None:
        self.store_dir = Path(store_dir)
        self.timeout_s = timeout_s
        self.backend: Backend | None = Backend.start(ensure_snapshot(self.store_dir), timeout_s)
        self.swaps = 0
        self.restarts = 0
        self.last_restart: dict[str, str] | None = None
        self.down_reason: str | None = None
        self._probe_failures = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._watcher = threading.Thread(target=self._watch, name="backend-watcher", daemon=True)
        self._watcher.start()

    # -- use ----------------------------------------------------------------------------------------

    def acquire(self) -> Backend:
        """The current backend, counted in flight; ``StoreError`` when none is up."""
        with self._lock:
            backend = self.backend
            if backend is None:
                raise StoreError(self.down_reason or "the SPARQL backend is down")
            with backend.lock:
                backend.in_flight += 1
            return backend

    @staticmethod
    def release(backend: Backend) -> None:
        with backend.lock:
            backend.in_flight -= 1

    # -- replacement --------------------------------------------------------------------------------

    def replace(self, backend: Backend, reason: str) -> bool:
        """Replace ``backend`` (if still current) by a fresh one on its snapshot; False if that failed."""
        with self._lock:
            if backend is not self.backend:
                return True  # already replaced (a swap, or another request saw the same failure)
            print(f"toolkg serve: restarting the SPARQL backend: {reason}", file=sys.stderr, flush=True)
            self.restarts += 1
            self.last_restart = {"at": _now(), "reason": reason}
            try:
                fresh = Backend.start(backend.snapshot, self.timeout_s)
            except StoreError as exc:
                self.backend, self.down_reason = None, f"the SPARQL backend is down: {exc}"
                print(f"toolkg serve: {self.down_reason}", file=sys.stderr, flush=True)
                fresh = None
            else:
                self.backend, self.down_reason = fresh, None
            self._probe_failures = 0
        grace = 0 if not backend.alive() else self.timeout_s
        threading.Thread(target=backend.stop, args=(grace,), daemon=True).start()
        return fresh is not None

    def check(self, backend: Backend) -> None:
        """After a failed request: replace the backend if its process is gone."""
        if not backend.alive():
            self.replace(backend, backend.exit_reason())

    def _watch(self) -> None:
        last_probe = time.monotonic()
        while not self._stopping.wait(POLL_SECONDS):
            try:
                self._watch_once(time.monotonic() - last_probe >= PROBE_EVERY_SECONDS)
            except Exception as exc:  # the watcher must outlive anything one round meets
                print(f"toolkg serve: backend watcher: {exc}", file=sys.stderr, flush=True)
            if time.monotonic() - last_probe >= PROBE_EVERY_SECONDS:
                last_probe = time.monotonic()

    def _watch_once(self, probe: bool) -> None:
        backend = self.backend
        if backend is None:  # down: try again on the newest snapshot each round
            self._revive()
            return
        if not backend.alive():
            self.replace(backend, backend.exit_reason())
            return
        latest = current_snapshot(self.store_dir)
        if latest is not None and latest != backend.snapshot:
            self._swap(backend, latest)
            return
        if probe:
            if backend.probe(PROBE_TIMEOUT_SECONDS):
                self._probe_failures = 0
            else:
                self._probe_failures += 1
                if self._probe_failures >= PROBE_FAILURES_TO_REPLACE:
                    self.replace(backend, f"the SPARQL backend did not answer ASK {{}} in {PROBE_TIMEOUT_SECONDS:g}s")

    def _swap(self, old: Backend, latest: Path) -> None:
        try:
            fresh = Backend.start(latest, self.timeout_s)
        except StoreError as exc:  # keep serving the old snapshot; say why once per attempt
            print(f"toolkg serve: staying on {old.snapshot.name}: {exc}", file=sys.stderr)
            return
        with self._lock:
            if self.backend is not old:
                threading.Thread(target=fresh.stop, args=(0,), daemon=True).start()
                return
            self.backend = fresh
            self.swaps += 1
        threading.Thread(target=old.stop, args=(self.timeout_s + 5,), daemon=True).start()
        print(f"toolkg serve: now serving snapshot {latest.name}", file=sys.stderr, flush=True)

    def _revive(self) -> None:
        snapshot = current_snapshot(self.store_dir)
        if snapshot is None:
            return
        try:
            fresh = Backend.start(snapshot, self.timeout_s)
        except StoreError as exc:
            self.down_reason = f"the SPARQL backend is down: {exc}"
            return
        with self._lock:
            self.backend, self.down_reason = fresh, None
        print(f"toolkg serve: the SPARQL backend is up again on {snapshot.name}", file=sys.stderr, flush=True)

    # -- reporting ----------------------------------------------------------------------------------

    def status(self) -> dict[str, object]:
        backend = self.backend
        alive = backend is not None and backend.alive()
        # Asked, not assumed: a process can be alive and wedged (the watcher replaces it after two probes).
        answering = alive and backend.probe(PROBE_TIMEOUT_SECONDS / 2)
        if answering:
            state, error = "up", None
        elif alive:
            state, error = (
                "unresponsive",
                f"the SPARQL backend did not answer ASK {{}} in {PROBE_TIMEOUT_SECONDS / 2:g}s",
            )
        else:
            state, error = "down", self.down_reason or "the SPARQL backend is not running"
        return {
            "store": str(self.store_dir.resolve()),
            "snapshot": backend.snapshot.name if backend else None,
            "serving_since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(backend.started)) if backend else None,
            "backend": {
                "state": state,
                "pid": backend.process.pid if backend else None,
                "restarts": self.restarts,
                "last_restart": self.last_restart,
                "error": error,
            },
            "swaps": self.swaps,
            "query_timeout_s": self.timeout_s,
            "read_only": True,
        }

    def close(self) -> None:
        self._stopping.set()
        with self._lock:
            backend, self.backend = self.backend, None
        if backend is not None:
            backend.stop(grace=0)
