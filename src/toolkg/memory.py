"""Peak memory per build stage, over every process the build runs.

A sampler thread sums the resident memory (RSS) of this process and all its descendants (the
validation workers, Dask workers, the temporary Prefect server) ten times a second and keeps, for
each stage, the highest sum seen while that stage was the current one. Stages say when they run
with ``stage(name)``; time outside any stage counts as ``"other"``. RSS counts pages shared between
processes once per process, so the sum errs high, never low.

    sampler = PeakSampler().start()
    with memory.stage("load"):
        ...
    sampler.stop()  # {"load": 812.4, "other": 301.0}  (MiB)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psutil

_current = "other"


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Mark ``name`` as the running stage until the block ends (then the enclosing one again)."""
    global _current
    previous, _current = _current, name
    try:
        yield
    finally:
        _current = previous


def total_rss() -> int:
    """Bytes resident in this process and all its descendants (a process gone meanwhile counts 0)."""
    me = psutil.Process()
    total = me.memory_info().rss
    for child in me.children(recursive=True):
        try:
            total += child.memory_info().rss
        except psutil.Error:
            pass
    return total


class PeakSampler:
    """Samples ``total_rss`` every ``interval`` seconds while open; ``peaks_mb`` per stage."""

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self.peaks: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="toolkg-memory", daemon=True)

    def _sample(self) -> None:
        try:
            rss = total_rss()
        except psutil.Error:
            return
        name = _current
        if rss > self.peaks.get(name, 0):
            self.peaks[name] = rss

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def start(self) -> PeakSampler:
        self._sample()
        self._thread.start()
        return self

    def stop(self) -> dict[str, float]:
        """End sampling; the peak per stage in MiB."""
        self._stop.set()
        self._thread.join()
        self._sample()
        return {name: round(rss / 2**20, 1) for name, rss in self.peaks.items()}
