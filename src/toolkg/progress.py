"""Progress of long stages on stderr ("ingest: 40/70 manifests (57%), 12.0/s, ETA 3s").

Written to stderr through ``write`` and rich's console (never ``print``): inside a Prefect flow with
``log_prints=True`` a print becomes a log record, and the CLI silences Prefect's logging.

- stderr is a terminal: one bar per running stage in rich's live display (``toolkg.progress_bars``), redrawn
  in place at most ten times a second, with counts, percentage, rate and ETA, fitted to the terminal's width;
  a stage that ends prints its final line above the bars still running.
- otherwise (a file, a pipe, CI, a ``TERM=dumb`` terminal): plain lines, at most one per stage every
  ``PLAIN_INTERVAL`` (2) seconds, plus the final one when the stage completes. A stage shorter than that
  prints its final line only.
- ``enable(False)`` (the CLI's ``-q``) silences everything.

Use, from any stage (stage names are fixed strings, never data)::

    progress.report("ingest", done, total, unit="manifests")   # done == total ends the stage

    with progress.stage("embed", len(texts), unit="texts") as bar:  # start ... done, even on error
        for chunk in chunks:
            ...
            bar.advance(len(chunk))     # or bar.update(done)

    progress.start("infer", total, unit="tools"); ...; progress.report("infer", n, total, "tools"); ...
    progress.done("infer")              # ends the stage where it stands (its final line)

``report`` alone is enough: its first call starts the stage (the rate counts from there) and
``done == total`` ends it. ``start`` makes the stage's duration count from the real beginning. A total of
``None`` means unknown: counts and rate, no percentage, bar or ETA. A total of 0 or 1 is no progress to show.
A stage reported again after it ended starts anew (the same label may run once per method, say).

Each stage is a task of rich's ``Progress`` (``toolkg.progress_bars.Bars``), terminal or not: rich keeps
the counts and times, and its rate is over the last 30 s (``Task.speed``), so the ETA follows a stage
that speeds up after a slow start; a stage's final line gives its average rate over its whole duration.

``Progress`` is the machinery (stream, clock, terminal detection and width injectable, for tests); the
module functions drive one shared instance.
"""

from __future__ import annotations

import atexit
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.progress import Task

    from toolkg.progress_bars import Bars

PLAIN_INTERVAL = 2.0  # seconds between two plain lines of one stage
TTY_INTERVAL = 0.1  # seconds between two redraws of the bars
PREFIX = "[toolkg] "


def _duration(seconds: float) -> str:
    """'42s', '3m05s', '1h02m'.

    >>> _duration(4.2), _duration(185), _duration(3725)
    ('4s', '3m05s', '1h02m')
    """
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _rate(value: float) -> str:
    """'0.52/s', '12.3/s', '450/s'; the form chosen on the rounded value (99.996 is '100/s', not '100.0/s').

    >>> _rate(0.5213), _rate(12.34), _rate(99.996), _rate(9.999), _rate(450.2)
    ('0.52/s', '12.3/s', '100/s', '10.0/s', '450/s')
    """
    if round(value, 1) >= 100:
        return f"{value:.0f}/s"
    return f"{value:.1f}/s" if round(value, 2) >= 10 else f"{value:.2f}/s"


def describe(task: Task, final: bool) -> list[str]:
    """A stage's text in parts (see ``progress_bars.Describe``): '32/40 manifests', ' (80%)', ', 12.0/s',
    ', ETA 1s'; once done '40/40 manifests', ' (100%)', ' in 3s', ', 13.3/s' (the rate over the whole stage)."""
    done, total, unit = int(task.completed), task.total, task.fields["unit"]
    if total:
        parts = [f"{done}/{int(total)} {unit}", f" ({int(100 * min(done, total) // total)}%)"]
    else:
        parts = [f"{done} {unit}"]
    elapsed = task.elapsed or 0.0
    if final:
        moved = done - task.fields["base"]  # a stage begun by its first report counts from that report's count
        rate = moved / elapsed if elapsed > 0 and moved > 0 else None
        if task.fields["timed"] or rate:  # begun by start(), or it moved: it has a duration worth saying
            parts.append(f" in {_duration(elapsed)}")
        return parts + ([f", {_rate(rate)}"] if rate else [])
    speed = task.speed  # rich's, from the reports of the last 30 s (None before the second one)
    if speed:
        parts.append(f", {_rate(speed)}")
        if total:
            parts.append(f", ETA {_duration(max(total - done, 0) / speed)}")
    return parts


@dataclass
class Progress:
    """Progress reports to one stream; ``tty=None`` asks the stream whether it is a terminal."""

    stream: IO[str] | None = None  # None: sys.stderr at the time of writing
    tty: bool | None = None
    clock: Callable[[], float] = time.monotonic
    enabled: bool = True
    width: int | None = None  # terminal columns (None: rich asks the terminal)
    _bars: Bars | None = None  # made on the first stage (importing rich.progress costs ~0.1 s)
    _drawn: float | None = None  # when the bars were last redrawn
    _lock: threading.RLock = field(default_factory=threading.RLock)

    # -- the stream ------------------------------------------------------------------------------
    def _out(self) -> IO[str] | None:
        out = self.stream if self.stream is not None else (sys.stderr or sys.__stderr__)
        # While the bars run, sys.stderr is rich's proxy (writes land above the bars); it is no tty itself.
        return getattr(out, "rich_proxied_file", out)

    def _tasks(self) -> Bars:
        if self._bars is None:
            from toolkg.progress_bars import Bars

            self._bars = Bars(describe, self.stream, self.width, self.clock)
        return self._bars

    def _is_tty(self, out: IO[str]) -> bool:
        """A terminal the bars can be redrawn on: a tty, unless rich says it cannot animate (TERM=dumb,
        TTY_INTERACTIVE=0); a test's ``tty=`` decides alone."""
        if self.tty is not None:
            return self.tty
        try:
            return out.isatty() and self._tasks().console.is_interactive
        except (AttributeError, ValueError, OSError):
            return False

    def _line(self, out: IO[str], task: Task, final: bool) -> None:
        """A plain line: '[toolkg] ingest: 32/40 manifests (80%), 12.0/s, ETA 1s'."""
        try:
            out.write(PREFIX + task.description + ": " + "".join(describe(task, final)) + "\n")
            out.flush()
        except (OSError, ValueError):  # a closed or broken stderr never stops the work
            pass

    def _task(self, stage: str) -> Task | None:
        return None if self._bars is None else self._bars.named(stage)  # no stage yet: rich not imported

    def _add(self, stage: str, total: int | None, unit: str, done: int, timed: bool) -> Task:
        bars = self._tasks()
        old = bars.named(stage)
        if old is not None:  # begun again before it ended: the new run replaces it
            bars.remove_task(old.id)
        # Hidden until its first report, as a stage that never moves shows nothing. 'shown': when its last
        # plain line was written (its start counts), 'base': its count when begun, 'timed': begun by start().
        fields: dict[str, Any] = {"unit": unit, "base": done, "timed": timed, "shown": self.clock()}
        bars.add_task(stage, total=total, completed=done, visible=False, **fields)
        task = bars.named(stage)
        assert task is not None
        return task

    # -- stages ----------------------------------------------------------------------------------
    def start(self, stage: str, total: int | None, unit: str = "items") -> None:
        if not self.enabled:  # nothing to show, and rich's import spared (-q, the MCP server)
            return
        with self._lock:
            self._add(stage, total, unit, 0, timed=True)

    def report(self, stage: str, done: int, total: int | None, unit: str = "manifests") -> None:
        if not self.enabled or (total is not None and total <= 1):
            return
        with self._lock:
            now = self.clock()
            task = self._task(stage)
            if task is None or task.total != total:  # first report: the stage starts here
                task = self._add(stage, total, unit, done, timed=False)
            self._tasks().update(task.id, completed=done, unit=unit or task.fields["unit"])
            final = total is not None and done >= total
            out = self._out()
            if out is None:
                return
            if self._is_tty(out):
                self._draw(task, now, final)
            elif final or now - task.fields["shown"] >= PLAIN_INTERVAL:
                self._line(out, task, final)
                task.fields["shown"] = now
            if final:
                self._drop(task)

    def advance(self, stage: str, count: int = 1) -> None:
        """``count`` more items of a started stage."""
        with self._lock:
            task = self._task(stage)
            if task is not None:
                self.report(stage, int(task.completed) + count, _total(task), task.fields["unit"])

    def done(self, stage: str) -> None:
        """End a stage where it stands: its final line (plain, or printed above the bars still running)."""
        with self._lock:
            task = self._task(stage)
            if task is None:
                return
            out = self._out()
            if self.enabled and not (task.total is not None and task.total <= 1) and out is not None:
                if self._is_tty(out):
                    if task.completed or task.visible:
                        self._draw(task, self.clock(), True)
                elif task.completed:
                    self._line(out, task, True)
            self._drop(task)

    @contextmanager
    def stage(self, name: str, total: int | None, unit: str = "items") -> Iterator[_Handle]:
        self.start(name, total, unit)
        try:
            yield _Handle(self, name)
        finally:
            self.done(name)

    def close(self) -> None:
        """Stop the bars (at exit), leaving the lines of stages that never ended where they stood, so an
        interrupted build shows how far it got and the shell prompt starts on a line of its own."""
        with self._lock:
            if self._bars is not None and self._bars.live.is_started:
                self._bars.live.transient = False
                self._safely(self._bars.stop)

    # -- the bars --------------------------------------------------------------------------------
    def _draw(self, task: Task, now: float, final: bool) -> None:
        bars = self._tasks()
        if final:  # off the live area, then printed for good above what still runs
            if bars.live.is_started and not any(t.visible for t in bars.tasks if t.id != task.id):
                # The last bar: stop while it is still drawn (transient: erased, the cursor back at its start);
                # stopped on an empty area, rich before 14.1 leaves a blank line.
                self._safely(bars.stop)
            bars.remove_task(task.id)
            if bars.live.is_started:
                self._safely(bars.refresh)
            self._safely(lambda: bars.print_line(task, final=True))
            return
        first = not task.visible
        task.visible = True
        if not bars.live.is_started:
            self._safely(bars.start)  # draws at once
        elif first or self._drawn is None or now - self._drawn >= TTY_INTERVAL:
            self._safely(bars.refresh)
        else:
            return
        self._drawn = now

    def _drop(self, task: Task) -> None:
        bars = self._tasks()
        if task.id in bars.task_ids:
            bars.remove_task(task.id)
        if bars.live.is_started and not any(t.visible for t in bars.tasks):
            self._safely(bars.stop)

    @staticmethod
    def _safely(draw: Callable[[], object]) -> None:
        try:
            draw()
        except (OSError, ValueError):  # a closed or broken stderr never stops the work
            pass


def _total(task: Task) -> int | None:
    return None if task.total is None else int(task.total)


class _Handle:
    """What ``Progress.stage`` yields: ``update(done)`` or ``advance(n)`` on its stage."""

    def __init__(self, progress: Progress, name: str) -> None:
        self._progress, self._name = progress, name

    def update(self, done: int) -> None:
        with self._progress._lock:
            task = self._progress._task(self._name)
            if task is not None:
                self._progress.report(self._name, done, _total(task), task.fields["unit"])

    def advance(self, count: int = 1) -> None:
        self._progress.advance(self._name, count)


_default = Progress()


def enable(flag: bool) -> None:
    """Switch progress on or off (the CLI's ``-q`` switches it off)."""
    _default.enabled = flag


def start(stage: str, total: int | None, unit: str = "items") -> None:
    """Begin a stage now, so its duration counts from here."""
    _default.start(stage, total, unit)


def report(stage: str, done: int, total: int | None, unit: str = "manifests") -> None:
    """``done`` of ``total`` items of ``stage``; ``done >= total`` ends the stage."""
    _default.report(stage, done, total, unit)


def advance(stage: str, count: int = 1) -> None:
    """``count`` more items of a stage begun with ``start``."""
    _default.advance(stage, count)


def done(stage: str) -> None:
    """End a stage where it stands (on errors, or when the total was unknown)."""
    _default.done(stage)


def stage(name: str, total: int | None, unit: str = "items"):
    """Context manager: ``start`` on entry, ``done`` on exit; yields a handle with ``update`` / ``advance``."""
    return _default.stage(name, total, unit)


atexit.register(_default.close)
