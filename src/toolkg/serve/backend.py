"""The SPARQL processes behind `toolkg serve`: started on a snapshot, watched, replaced.

Each is the project's one SPARQL sandbox (``toolkg.store.sparql_sandbox``: a process with no address, asked
over a socket pair, with a deadline, a memory limit and a cap on its answers); this module is the endpoint's
policy for them. A backend is replaced when a build publishes a new snapshot (queries in flight on the old one
finish first), when its process dies (the guard in ``toolkg.store.query_guard`` refuses the shapes known to
overflow, but the endpoint must not depend on knowing them all), when it stops answering a health probe
(wedged), and when a query outruns the timeout or its memory limit (the queries in flight then get 507 ``query
exceeded its memory limit``, since the process they shared is gone). ``status()`` says which of these happened
last, so ``/status`` tells the truth about the backend rather than about the proxy.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from pathlib import Path

from toolkg.errors import StoreError
from toolkg.memory_guard import exceeded
from toolkg.store.snapshots import current_snapshot, ensure_snapshot
from toolkg.store.sparql_sandbox import Backend

POLL_SECONDS = 1.0  # how often the watcher looks for a new snapshot and a dead process
PROBE_EVERY_SECONDS = 5.0  # how often an idle-or-busy backend is asked ASK {}
PROBE_TIMEOUT_SECONDS = 5.0
PROBE_FAILURES_TO_REPLACE = 2  # one slow answer under load is not a wedge; two in a row are
MEMORY_LIMIT_MIB = 2048  # what the queries in flight together may add to the process (toolkg serve --memory-limit)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Backends:
    """The backend in use, and a watcher that replaces it when it is stale, dead or wedged."""

    def __init__(
        self,
        store_dir: str | Path,
        timeout_s: int = 30,
        *,
        allow_service: bool = False,
        memory_limit_mib: int = MEMORY_LIMIT_MIB,
    ) -> None:
        self.store_dir = Path(store_dir)
        self.timeout_s = timeout_s
        self.allow_service = allow_service
        self.memory_limit_mib = memory_limit_mib
        self.backend: Backend | None = self._start(ensure_snapshot(self.store_dir))
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

    def replace(self, backend: Backend, reason: str, wedged: bool = False) -> bool:
        """Replace ``backend`` (if still current) by a fresh one on its snapshot; False if that failed. A
        ``wedged`` one (it answers nothing) is stopped at once: nothing in flight will come back from it."""
        with self._lock:
            if backend is not self.backend:
                return True  # already replaced (a swap, or another request saw the same failure)
            print(f"toolkg serve: restarting the SPARQL backend: {reason}", file=sys.stderr, flush=True)
            self.restarts += 1
            self.last_restart = {"at": _now(), "reason": reason}
            try:
                fresh = self._start(backend.snapshot)
            except StoreError as exc:
                self.backend, self.down_reason = None, f"the SPARQL backend is down: {exc}"
                print(f"toolkg serve: {self.down_reason}", file=sys.stderr, flush=True)
                fresh = None
            else:
                self.backend, self.down_reason = fresh, None
            self._probe_failures = 0
        grace = 0 if wedged or not backend.alive() else self.timeout_s
        threading.Thread(target=backend.stop, args=(grace,), daemon=True).start()
        return fresh is not None

    def _start(self, snapshot: Path) -> Backend:
        return Backend.start(snapshot, self.allow_service, self.memory_limit_mib)

    def check(self, backend: Backend) -> None:
        """After a failed request: replace the backend if its process is gone. A process that hung up may take a
        moment to be reaped: its sockets close before it is a zombie (an abort writes its message first)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            backend.process.wait(2)
        if not backend.alive():
            self.replace(backend, backend.exit_reason())

    def memory_exceeded(self) -> str:
        """What a query lost with a process that ended at its memory limit is told (one line)."""
        return exceeded(self.memory_limit_mib) + "; the backend, shared with the queries beside it, was restarted"

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
                    reason = f"the SPARQL backend did not answer ASK {{}} in {PROBE_TIMEOUT_SECONDS:g}s"
                    self.replace(backend, reason, wedged=True)

    def _swap(self, old: Backend, latest: Path) -> None:
        try:
            fresh = self._start(latest)
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
            fresh = self._start(snapshot)
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
        answering = alive and backend is not None and backend.probe(PROBE_TIMEOUT_SECONDS / 2)
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
            "query_memory_limit_mib": self.memory_limit_mib,
            "read_only": True,
        }

    def close(self) -> None:
        self._stopping.set()
        with self._lock:
            backend, self.backend = self.backend, None
        if backend is not None:
            backend.stop(grace=0)
