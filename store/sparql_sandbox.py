"""The one SPARQL sandbox: a process of its own over one snapshot, that only its parent can ask anything.

Used by `toolkg serve`'s endpoint (``toolkg.serve.backend`` watches and replaces these processes) and by
`toolkg mcp`'s ``sparql`` tool (``toolkg.toolsearch.sparql_tool``): strangers' SPARQL runs here and nowhere else.
What a query meets (the process's side is ``toolkg.store.sparql_sandbox_worker``):

- a process of its own, so that a query which overflows its stack ends it and not the server, and a query which
  runs away is stopped by killing it: neither pyoxigraph nor Oxigraph can cancel every query from outside
  (aggregates keep computing past Oxigraph's own timeout);
- no address: the parent holds one end of a Unix socket pair the process inherited and passes it, per query, one
  end of a fresh socket pair (``SCM_RIGHTS``). It used to be ``oxigraph serve-read-only`` on a loopback port,
  which anything that found the port could query around the endpoint's checks (any ``Host``, ``SERVICE``
  towards any local port);
- the snapshot opened read-only; ``SERVICE`` refused again in the process and, on Linux, no internet socket at
  all (seccomp) unless federation is allowed;
- a deadline per query (``ask``: ``TimeoutError`` past it, and the caller stops the process);
- a memory limit (``toolkg.memory_guard``: ``RLIMIT_DATA`` in the process, a watchdog on its resident memory
  here; ``out_of_memory`` tells a process that ended at it from one that crashed);
- a cap on an answer's size (``MAX_RESULT_BYTES``, enforced by the process as it serializes) and, for the MCP
  tool's rows, on their number;
- the process dies with the thread that started it (``PR_SET_PDEATHSIG``): every one is started from the one
  long-lived ``_SPAWNER`` thread, so none outlives its server, even one killed with SIGKILL.
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
from toolkg.memory_guard import RssWatchdog, ran_out_of_memory

MAX_RESULT_BYTES = 64 * 1024 * 1024  # an answer is buffered whole (to be sure it is whole) up to this
QUERY_THREADS = 32  # as many as the endpoint has request threads: a query never waits for a thread there
READY_TIMEOUT_S = 15.0  # how long a fresh process may take to open its snapshot and answer ASK {}
# Processes are started from this one thread, which lives as long as the server (see _die_with_parent).
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
    def start(
        cls,
        snapshot: Path,
        allow_service: bool = False,
        memory_limit_mib: int = 0,
        *,
        threads: int = QUERY_THREADS,
        ready_timeout: float = READY_TIMEOUT_S,
    ) -> Backend:
        """A process answering from ``snapshot`` once it answers ``ASK {}``; ``StoreError`` (with the reason it
        wrote to stderr) when it does not within ``ready_timeout`` seconds. ``threads``: queries at once."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # A file, not a pipe: a pipe nobody reads fills up and blocks the process. Its end says why a start
        # failed, or that the process hit its memory limit. Kept here: Popen's .stderr is None for a file.
        errors = tempfile.TemporaryFile()
        command = [
            sys.executable,
            "-m",
            "toolkg.store.sparql_sandbox_worker",
            "--snapshot",
            str(snapshot),
            "--control-fd",
            str(theirs.fileno()),
            "--threads",
            str(threads),
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
        if backend._wait_ready(ready_timeout):
            if memory_limit_mib:  # started once ready: what the process holds then is its baseline
                backend.watchdog = RssWatchdog(process.pid, memory_limit_mib * 2**20)
            return backend
        reason = backend.error()
        backend.stop(grace=0)
        raise StoreError(f"the SPARQL backend could not serve {snapshot}: {reason}")

    def alive(self) -> bool:
        return self.process.poll() is None

    def ask(
        self,
        query: str,
        deadline: float,
        *,
        graphs=(),
        accept: str = "",
        base: str | None = None,
        rows: int | None = None,
    ) -> tuple[int, bytes, str]:
        """(status, body, content type) for ``query``, read whole before ``deadline`` (else TimeoutError);
        ``BackendError`` when the process cannot be asked or hangs up before the answer is whole. ``rows``: the
        answer is the MCP tool's JSON (at most that many rows, ``sparql_sandbox_worker.rows_answer``) rather
        than a SPARQL results format chosen by ``accept``."""
        fields = {"query": query, "graphs": list(graphs), "accept": accept, "base": base}
        request = json.dumps(fields if rows is None else {**fields, "rows": rows}).encode()
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
