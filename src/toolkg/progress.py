"""Progress lines on stderr for long work ("load: 40/70 manifests"), throttled to one per second."""

from __future__ import annotations

import sys
import time

_enabled = True
_last: dict[str, float] = {}


def enable(flag: bool) -> None:
    global _enabled
    _enabled = flag


def report(stage: str, done: int, total: int, unit: str = "manifests") -> None:
    if not _enabled or total <= 1:
        return
    now = time.monotonic()
    if done < total and now - _last.get(stage, 0.0) < 1.0:
        return
    _last[stage] = now
    print(f"[toolkg] {stage}: {done}/{total} {unit} ({100 * done // total}%)", file=sys.stderr, flush=True)
