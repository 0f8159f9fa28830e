"""The SPARQL processes behind `toolkg serve`: started on a snapshot, watched, replaced.

A backend is a process of its own (``toolkg.serve.backend_worker``: pyoxigraph over the snapshot) so that a query
which overflows its stack ends it and not the endpoint, and a query which runs away can be stopped by killing it:
neither pyoxigraph nor Oxigraph can cancel every query from outside (aggregates keep computing past Oxigraph's own
timeout). It used to be ``oxigraph serve-read-only`` on a loopback port, which anything that found the port could
query around the endpoint's checks (any ``Host``, ``SERVICE`` towards any local port); now it has no address at
all. The endpoint holds one end of a Unix socket pair the process inherited and passes it, per query, one end of
a fresh socket pair (``SCM_RIGHTS``): only this module can ask it anything.

A backend is replaced when a build publishes a new snapshot (queries in flight on the old one finish first),
when its process dies (the guard in ``toolkg.store.query_guard`` refuses the shapes known to overflow, but the
endpoint must not depend on knowing them all), when it stops answering a health probe (wedged), and when a query
outruns the timeout or its memory limit (``toolkg.memory_guard``: ``RLIMIT_DATA`` in the process, a watchdog on
its resident memory here; the queries in flight then get 507 ``query exceeded its memory limit``, since the
process they shared is gone). ``status()`` says which of these happened last, so ``/status`` tells the truth about the
backend rather than about the proxy.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from toolkg.errors import StoreError
from toolkg.memory_guard import RssWatchdog, exceeded, ran_out_of_memory
from toolkg.store.snapshots import current_snapshot, ensure_snapshot

POLL_SECONDS = 1.0  # how often the watcher looks for a new snapshot and a dead process
PROBE_EVERY_SECONDS = 5.0  # how often an idle-or-busy backend is asked ASK {}
PROBE_TIMEOUT_SECONDS = 5.0
PROBE_FAILURES_TO_REPLACE = 2  # one slow answer under load is not a wedge; two in a row are
MAX_RESULT_BYTES = 64 * 1024 * 1024  # an answer is buffered whole (to be sure it is whole) up to this
QUERY_THREADS = 32  # as many as the endpoint has request threads: a query never waits for a thread here
MEMORY_LIMIT_MIB = 2048  # what the queries in flight together may add to the process (toolkg serve --memory-limit)
# Backends are started from this one thread, which lives as long as the process (see _die_with_parent).
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sparql-spawner")


class BackendError(OSError):
    """The backend process could not be asked, or hung up before its answer was whole."""


def _die_with_parent() -> None:
    """Run in the child before exec: Linux sends it SIGKILL when the thread that started it ends, which is
    why every backend is started from the one long-lived ``_SPAWNER`` thread. SIGKILL, not SIGTERM: a wedged
    (stopped) worker acts on no other signal and would outlive the endpoint; a read-only worker has nothing
    to flush."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except OSError:  # not Linux: the endpoint's own shutdown path still stops it
        pass


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class Backend:
    """One SPARQL process answering from one snapshot, asked through the socket it inherited."""

    snapshot: Path
    process: subprocess.Popen
    control: socket.socket  # our end of the pair the process inherited; queries' sockets are passed on it
    stderr: IO[bytes]  # the file the process writes its stderr to
    started: float = field(default_factory=time.time)
    in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    _send_lock: threading.Lock = field(default_factory=threading.Lock)
    memory_limit_mib: int = 0
    watchdog: RssWatchdog | None = None
    _out_of_memory: bool | None = None  # decided once the process is gone (its stderr file closes in stop)

    @classmethod
    def start(cls, snapshot: Path, allow_service: bool = False, memory_limit_mib: int = 0) -> Backend:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # A file, not a pipe: a pipe nobody reads fills up and blocks the process. Its end says why a start
        # failed, or that the process hit its memory limit. Kept here: Popen's .stderr is None for a file.
        errors = tempfile.TemporaryFile()
        command = [
            sys.executable,
            "-m",
            "toolkg.serve.backend_worker",
            "--snapshot",
            str(snapshot),
            "--control-fd",
            str(theirs.fileno()),
            "--threads",
            str(QUERY_THREADS),
            "--max-result-bytes",
            str(MAX_RESULT_BYTES),
            *(["--allow-service"] if allow_service else []),
            *(["--memory-limit-mib", str(memory_limit_mib)] if memory_limit_mib else []),
        ]
        try:
            process = _SPAWNER.submit(
                subprocess.Popen,
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                pass_fds=(theirs.fileno(),),
                preexec_fn=_die_with_parent,
            ).result()
        finally:
            theirs.close()  # the process has its copy; ours must not keep the pair open if it dies
        backend = cls(snapshot, process, ours, errors, memory_limit_mib=memory_limit_mib)
        if backend._wait_ready(15.0):
            if memory_limit_mib:  # started once ready: what the process holds then is its baseline
                backend.watchdog = RssWatchdog(process.pid, memory_limit_mib * 2**20)
            return backend
        reason = backend.error()
        backend.stop(grace=0)
        raise StoreError(f"the SPARQL backend could not serve {snapshot}: {reason}")

    def alive(self) -> bool:
        return self.process.poll() is None

    def ask(
        self, query: str, deadline: float, *, graphs=(), accept: str = "", base: str | None = None
    ) -> tuple[int, bytes, str]:
        """(status, body, content type) for ``query``, read whole before ``deadline`` (else TimeoutError);
        ``BackendError`` when the process cannot be asked or hangs up before the answer is whole."""
        request = json.dumps({"query": query, "graphs": list(graphs), "accept": accept, "base": base}).encode()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with self._send_lock:
                self.control.settimeout(max(deadline - time.monotonic(), 0.01))
                try:
                    socket.send_fds(self.control, [b"q"], [theirs.fileno()])
                except TimeoutError:
                    raise
                except OSError as exc:
                    raise BackendError(f"the SPARQL backend is not taking queries: {exc}") from None
            theirs.close()
            ours.settimeout(max(deadline - time.monotonic(), 0.01))
            ours.sendall(request)
            ours.shutdown(socket.SHUT_WR)
            return _read_answer(ours, deadline)
        finally:
            ours.close()
            theirs.close()

    def probe(self, timeout: float) -> bool:
        """Whether it answers ``ASK {}`` within ``timeout`` seconds."""
        try:
            return self.ask("ASK {}", time.monotonic() + timeout)[0] == 200
        except OSError:  # TimeoutError and BackendError included
            return False

    def _wait_ready(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self.alive():
                return False
            if self.probe(min(2.0, max(deadline - time.monotonic(), 0.1))):
                return True
            time.sleep(0.05)
        return False

    def error(self) -> str:
        if self.alive() or self.stderr.closed:
            return "did not answer in time"
        lines = self._stderr_tail().strip().splitlines()
        return lines[-1] if lines else f"exited with {self.process.returncode}"

    def _stderr_tail(self, size: int = 8192) -> str:
        """The end of what the process wrote to stderr ("" while it runs). pread, not seek and read: request
        threads may ask at once."""
        if self.alive() or self.stderr.closed:
            return ""
        stderr = self.stderr.fileno()
        end = os.fstat(stderr).st_size
        return os.pread(stderr, min(size, end), max(end - size, 0)).decode(errors="replace")

    def out_of_memory(self) -> bool:
        """Whether the process ended at its memory limit: killed by the watchdog, or aborted by its allocator."""
        if self.alive() or not self.memory_limit_mib:
            return False
        if self._out_of_memory is None:
            killed = self.watchdog is not None and self.watchdog.killed
            # The tail, not the last line: Rust's allocator may print a backtrace after its message.
            self._out_of_memory = killed or ran_out_of_memory(self._stderr_tail())
        return self._out_of_memory

    def exit_reason(self) -> str:
        if self.out_of_memory():
            return f"a query exceeded the backend's memory limit ({self.memory_limit_mib} MiB)"
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
        if self.watchdog is not None:
            self.watchdog.stop()
        self.process.terminate()
        if self.alive():
            with contextlib.suppress(OSError):  # a stopped process acts on SIGTERM only once continued
                os.kill(self.process.pid, signal.SIGCONT)
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.out_of_memory()  # decided while its stderr is still there to read
        self.control.close()
        self.stderr.close()


def _read_answer(sock: socket.socket, deadline: float) -> tuple[int, bytes, str]:
    """The backend's answer: a JSON line (status, content type), then the body until it closes.

    A socket timeout bounds each read, not the total, so the remaining time is set before every read."""
    chunks, size = [], 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        sock.settimeout(remaining)
        chunk = sock.recv(262144)
        if not chunk:
            break
        size += len(chunk)
        if size > MAX_RESULT_BYTES + 4096:  # the process caps its answers; this only guards against a bug there
            raise BackendError("the SPARQL backend sent more than it may")
        chunks.append(chunk)
    data = b"".join(chunks)
    head, newline, body = data.partition(b"\n")
    if not newline:
        raise BackendError("the SPARQL backend hung up before answering")
    meta = json.loads(head)
    return meta["status"], body, meta["content_type"]


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
