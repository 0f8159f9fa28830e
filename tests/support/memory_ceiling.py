"""A ceiling on the memory a process tree under attack may take: a test that attacks memory must not take the
machine down when the attack works (the defence under test broken, or not there yet)."""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass

PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass
class Watch:
    peak: int = 0  # the largest sum of resident memory seen over the tree, in bytes
    killed: bool = False  # the ceiling was reached and the tree killed


def _tree(root: int) -> list[int]:
    """``root`` and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                    ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


@contextmanager
def memory_ceiling(root: int, kill_at: int, every: float = 0.05):
    """Watch ``root``'s process tree; SIGKILL all of it once its resident memory passes ``kill_at`` bytes.
    Yields a ``Watch`` (its peak, whether it killed)."""
    watch, stop = Watch(), threading.Event()

    def run() -> None:
        while not stop.wait(every):
            pids = _tree(root)
            total = sum(_rss(pid) for pid in pids)
            watch.peak = max(watch.peak, total)
            if total > kill_at:
                watch.killed = True
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                return

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield watch
    finally:
        stop.set()
        thread.join()
