"""A memory limit for the processes that run strangers' SPARQL (the SPARQL sandbox, ``toolkg.store.sparql_sandbox``,
of ``toolkg serve`` and ``toolkg mcp``'s ``sparql`` tool): a limit on what a query may allocate, besides its time.

Why: one GET (``{ ?a ?b ?c . ?d ?e ?f . ?g ?h ?i } ORDER BY ?c ?f ?i LIMIT 1``, which an ``<img>`` on any web
page can send) grew the backend by 0.3-0.8 GB/s, past 3 GiB in 4-10 s, well inside the 30 s timeout: Oxigraph
materialises a sort's input whole. Two guards:

- ``RLIMIT_DATA`` (``limit_data``, in the query process, once its query threads exist): the kernel refuses
  private writable memory past the process's size at that moment plus the limit. The threads come first
  because each reserves a 512 MiB stack (``toolkg.store.query_guard.LARGE_STACK_BYTES``) that counts as data
  the moment it is mapped, though only what a query recurses into is ever used; ``RLIMIT_AS`` would also count
  malloc's per-thread arena reservations (64 MiB each, never touched). At the limit, pyoxigraph's allocator
  (Rust's) prints ``memory allocation of N bytes failed`` and aborts the process; Python raises
  ``MemoryError``. The parent tells one from a stack overflow by that line (``ran_out_of_memory``), answers
  ``query exceeded its memory limit (N MiB)`` and starts a fresh process.
- ``RssWatchdog`` (in the parent): resident memory polled every ``WATCH_EVERY_S``; a process past its limit
  plus what it held when it was ready is killed. A second line, for what ``RLIMIT_DATA`` does not count (stack
  pages a deep query touched) and for machines where it cannot be set.
"""

from __future__ import annotations

import os
import resource
import signal
import sys
import threading
from collections.abc import Callable

WATCH_EVERY_S = 0.05  # at 0.8 GB/s a poll interval lets ~40 MB past the limit before the kill
# What a process that hit its limit last wrote to stderr: Rust's alloc error handler, C++'s, Python's.
_OUT_OF_MEMORY = ("memory allocation of", "std::bad_alloc", "MemoryError", "Cannot allocate memory")


def exceeded(limit_mib: int) -> str:
    """The one line a query that ran out of memory is answered with."""
    return f"query exceeded its memory limit ({limit_mib} MiB): narrow it"


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def limit_data(limit_bytes: int) -> bool:
    """Let this process allocate at most ``limit_bytes`` more private memory than it holds now (``RLIMIT_DATA``);
    True when the limit is in place (Linux)."""
    held = _status_kib("VmData")
    if held is None:
        return False
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    soft = held * 1024 + limit_bytes
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
    except (ValueError, OSError):
        return False
    return True


def rss_bytes(pid: int) -> int | None:
    """The resident memory of process ``pid``, or None when it is gone (or not on Linux)."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def ran_out_of_memory(stderr_tail: str) -> bool:
    """Whether what a dead query process last wrote says it hit its memory limit."""
    return any(marker in stderr_tail for marker in _OUT_OF_MEMORY)


class RssWatchdog:
    """Kills process ``pid`` (SIGKILL) once its resident memory passes ``baseline + limit_bytes``, and then
    calls ``on_kill(rss)`` once. ``baseline`` is what it held when it was ready (the interpreter, pyoxigraph,
    the store's caches): the limit is on what queries add."""

    def __init__(self, pid: int, limit_bytes: int, on_kill: Callable[[int], None] | None = None) -> None:
        self.pid = pid
        self.limit = (rss_bytes(pid) or 0) + limit_bytes
        self.killed = False
        self._on_kill = on_kill
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"rss-watchdog-{pid}", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(WATCH_EVERY_S):
            rss = rss_bytes(self.pid)
            if rss is None:
                return
            if rss > self.limit:
                self.killed = True
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass
                if self._on_kill is not None:
                    try:
                        self._on_kill(rss)
                    except Exception as exc:  # the watchdog's own thread: say it, do not die silently
                        print(f"toolkg: memory watchdog: {exc}", file=sys.stderr, flush=True)
                return

    def stop(self) -> None:
        self._stop.set()
