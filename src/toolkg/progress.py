"""Progress of long stages on stderr ("ingest: 40/70 manifests (57%), 12.0/s, ETA 3s").

Written straight to ``sys.stderr`` with ``write`` (never ``print``): inside a Prefect flow with
``log_prints=True`` a print becomes a log record, and the CLI silences Prefect's logging.

- stderr is a terminal: one progress bar per stage, redrawn in place with ``\\r`` (at most ten times a
  second) with counts, percentage, rate and ETA; the stage's last draw ends the line.
- otherwise (a file, a pipe, CI): plain lines, at most one per stage every ``PLAIN_INTERVAL`` (2) seconds,
  plus the final one when the stage completes. A stage shorter than that prints its final line only.
- ``enable(False)`` (the CLI's ``-q``) silences everything.

Use, from any stage (stage names are fixed strings, never data)::

    progress.report("ingest", done, total, unit="manifests")   # done == total ends the stage

    with progress.stage("embed", len(texts), unit="texts") as bar:  # start ... done, even on error
        for chunk in chunks:
            ...
            bar.advance(len(chunk))     # or bar.update(done)

    progress.start("infer", total, unit="tools"); ...; progress.report("infer", n, total, "tools"); ...
    progress.done("infer")              # ends the stage where it stands (the final line, or the bar's newline)

``report`` alone is enough: its first call starts the stage (the rate counts from there) and
``done == total`` ends it. ``start`` makes the rate and ETA count from the real beginning. A total of
``None`` means unknown: counts and rate, no percentage or ETA. A total of 0 or 1 is no progress to show.
A stage reported again after it ended starts anew (the same label may run once per method, say).

``Progress`` is the machinery (stream, clock and terminal detection injectable, for tests); the module
functions drive one shared instance.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO

PLAIN_INTERVAL = 2.0  # seconds between two plain lines of one stage
TTY_INTERVAL = 0.1  # seconds between two redraws of a bar
PREFIX = "[toolkg] "


@dataclass
class _Stage:
    name: str
    total: int | None
    unit: str
    started: float
    base: int = 0  # items already done when the stage started (an implicit start mid-way)
    done: int = 0
    shown: float = 0.0  # when the stage last wrote (its start counts)
    drawn: int = 0  # length of the bar last drawn (0: none yet)
    timed: bool = True  # begun by start(); a stage begun by its first report has no duration until it moves


def _columns(out: IO[str]) -> int:
    """The terminal's width: $COLUMNS, else the size of the terminal ``out`` writes to, else 80."""
    try:
        return max(int(os.environ.get("COLUMNS", "")), 20)
    except ValueError:
        pass
    try:
        return max(os.get_terminal_size(out.fileno()).columns, 20)
    except (AttributeError, ValueError, OSError):
        return 80


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
    """'0.52/s', '12.3/s', '450/s'."""
    if value >= 100:
        return f"{value:.0f}/s"
    return f"{value:.1f}/s" if value >= 10 else f"{value:.2f}/s"


@dataclass
class Progress:
    """Progress reports to one stream; ``tty=None`` asks the stream whether it is a terminal."""

    stream: IO[str] | None = None  # None: sys.stderr at the time of writing
    tty: bool | None = None
    clock: Callable[[], float] = time.monotonic
    enabled: bool = True
    width: int | None = None  # terminal columns (None: asked of the terminal)
    _stages: dict[str, _Stage] = field(default_factory=dict)
    _open: str | None = None  # the stage whose bar line is not ended yet
    _lock: threading.RLock = field(default_factory=threading.RLock)

    # -- the stream ------------------------------------------------------------------------------
    def _out(self) -> IO[str] | None:
        return self.stream if self.stream is not None else (sys.stderr or sys.__stderr__)

    def _is_tty(self, out: IO[str]) -> bool:
        if self.tty is not None:
            return self.tty
        try:
            return out.isatty()
        except (AttributeError, ValueError, OSError):
            return False

    def _write(self, out: IO[str], text: str) -> None:
        try:
            out.write(text)
            out.flush()
        except (OSError, ValueError):  # a closed or broken stderr never stops the work
            pass

    # -- stages ----------------------------------------------------------------------------------
    def start(self, stage: str, total: int | None, unit: str = "items") -> None:
        with self._lock:
            now = self.clock()
            self._stages[stage] = _Stage(stage, total, unit, started=now, shown=now)

    def report(self, stage: str, done: int, total: int | None, unit: str = "manifests") -> None:
        if not self.enabled or (total is not None and total <= 1):
            return
        with self._lock:
            now = self.clock()
            state = self._stages.get(stage)
            if state is None or state.total != total:  # first report: the stage starts here
                state = _Stage(stage, total, unit, started=now, base=done, shown=now, timed=False)
                self._stages[stage] = state
            state.done, state.unit = done, unit or state.unit
            final = total is not None and done >= total
            out = self._out()
            if out is None:
                return
            if self._is_tty(out):
                if final or not state.drawn or now - state.shown >= TTY_INTERVAL:
                    self._draw(out, state, now, final)
            elif final or now - state.shown >= PLAIN_INTERVAL:
                self._write(out, PREFIX + self._text(state, now, final) + "\n")
                state.shown = now
            if final:
                del self._stages[stage]

    def advance(self, stage: str, count: int = 1) -> None:
        """``count`` more items of a started stage."""
        with self._lock:
            state = self._stages.get(stage)
            if state is not None:
                self.report(stage, state.done + count, state.total, state.unit)

    def done(self, stage: str) -> None:
        """End a stage where it stands: the final line (plain) or the bar's newline (terminal)."""
        with self._lock:
            state = self._stages.pop(stage, None)
            if state is None or not self.enabled or (state.total is not None and state.total <= 1):
                return
            out = self._out()
            if out is None:
                return
            now = self.clock()
            if self._is_tty(out):
                if state.done or state.drawn:
                    self._draw(out, state, now, True)
            elif state.done:
                self._write(out, PREFIX + self._text(state, now, True) + "\n")

    @contextmanager
    def stage(self, name: str, total: int | None, unit: str = "items") -> Iterator[_Handle]:
        self.start(name, total, unit)
        try:
            yield _Handle(self, name)
        finally:
            self.done(name)

    def close(self) -> None:
        """End an open bar line (at exit, so the shell prompt starts on a line of its own)."""
        with self._lock:
            if self._open is not None:
                out = self._out()
                if out is not None:
                    self._write(out, "\n")
                self._open = None

    # -- rendering -------------------------------------------------------------------------------
    def _text(self, s: _Stage, now: float, final: bool) -> str:
        """'ingest: 32/40 manifests (80%), 12.0/s, ETA 1s' ('... in 3s, 13.3/s' once done)."""
        elapsed = max(now - s.started, 0.0)
        rate = (s.done - s.base) / elapsed if elapsed > 0 and s.done > s.base else None
        if s.total:
            text = f"{s.name}: {s.done}/{s.total} {s.unit} ({100 * min(s.done, s.total) // s.total}%)"
        else:
            text = f"{s.name}: {s.done} {s.unit}"
        if final and (s.timed or rate):
            text += f" in {_duration(elapsed)}" + (f", {_rate(rate)}" if rate else "")
        elif rate:
            text += f", {_rate(rate)}"
            if s.total:
                text += f", ETA {_duration(max(s.total - s.done, 0) / rate)}"
        return text

    def _draw(self, out: IO[str], s: _Stage, now: float, final: bool) -> None:
        if self._open is not None and self._open != s.name:  # another stage's bar: leave it on its own line
            self._write(out, "\n")
            self._open = None
        columns = self.width or _columns(out)
        text = self._text(s, now, final)
        room = columns - 1 - len(PREFIX) - len(text) - 3  # ' [' + bar + ']' ... keep off the last column
        line = PREFIX + text
        if s.total and room >= 10:
            size = min(room, 30)
            filled = size * min(s.done, s.total) // s.total
            line = f"{PREFIX}{s.name} [{'#' * filled}{'.' * (size - filled)}]{text[len(s.name) + 1 :]}"
        line = line[: columns - 1]
        padding = " " * max(0, s.drawn - len(line))  # wipe what a longer previous draw left
        self._write(out, "\r" + line + padding + ("\n" if final else ""))
        s.shown, s.drawn = now, len(line)
        self._open = None if final else s.name


class _Handle:
    """What ``Progress.stage`` yields: ``update(done)`` or ``advance(n)`` on its stage."""

    def __init__(self, progress: Progress, name: str) -> None:
        self._progress, self._name = progress, name

    def update(self, done: int) -> None:
        state = self._progress._stages.get(self._name)
        if state is not None:
            self._progress.report(self._name, done, state.total, state.unit)

    def advance(self, count: int = 1) -> None:
        self._progress.advance(self._name, count)


_default = Progress()


def enable(flag: bool) -> None:
    """Switch progress on or off (the CLI's ``-q`` switches it off)."""
    _default.enabled = flag


def start(stage: str, total: int | None, unit: str = "items") -> None:
    """Begin a stage now, so its rate and ETA count from here."""
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
