"""The terminal side of ``toolkg.progress``: rich's live display, with one line per running stage.

rich does the terminal work: the live area redrawn in place (cursor up, erase line), the cursor hidden while
it runs, text written to ``sys.stderr`` meanwhile printed above the bars, the terminal's width (a terminal
that reports 0 columns, as an unconfigured pseudo-terminal does, counts as 80), the bar itself, and the
rate over the last seconds (``Task.speed``). What stays here is what to show in the width there is
(``fit``): the whole line with a bar when it fits, else no bar, then fewer clauses, then a shorter stage
name, never a count cut in the middle (40 columns used to show ``extract, validate, load: 200/2``).

Imported on a stage's first report only (``import rich.progress`` costs about 0.1 s, which commands that
report no progress should not pay). It imports nothing of toolkg: ``toolkg.progress`` hands it the text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import IO

from rich.console import Console, RenderableType
from rich.progress import Progress, Task
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

BAR = 30  # the widest bar, in columns
MIN_BAR = 10  # a narrower bar says little: the room goes to the text instead

# describe(task, final) -> the line's text in parts, each part after the first with its own separator:
# ["32/40 manifests", " (80%)", ", 12.0/s", ", ETA 1s"]; dropped from the end when the terminal is narrow.
Describe = Callable[[Task, bool], list[str]]


def fit(width: int, name: str, parts: list[str], bar: bool) -> tuple[str, int, str]:
    """(label, bar width or 0, text) for a line of at most ``width`` columns.

    >>> parts = ["32/100 manifests", " (32%)", ", 12.0/s", ", ETA 6s"]
    >>> fit(80, "[toolkg] ingest", parts, True)
    ('[toolkg] ingest', 25, '32/100 manifests (32%), 12.0/s, ETA 6s')
    >>> fit(39, "[toolkg] ingest", parts, True)
    ('[toolkg] ingest:', 0, '32/100 manifests (32%)')
    >>> fit(39, "[toolkg] extract, validate, load", ["200/200 tools", " (100%)", " in 1s"], True)
    ('[toolkg] extract, valid…:', 0, '200/200 tools')
    """
    text = "".join(parts)
    room = width - len(name) - len(text) - 2  # the spaces either side of the bar
    if bar and room >= MIN_BAR:
        return name, min(room, BAR), text
    label = name + ":"  # no bar: 'ingest: 32/100 ...', as the plain lines say it
    room = width - len(label) - 1
    kept = parts[0]
    for part in parts[1:]:
        if len(kept) + len(part) > room:
            break
        kept += part
    if len(kept) > room:  # even the count does not fit: the stage's name gives way, never the count
        short = Text(name)
        short.truncate(max(width - len(kept) - 2, 1), overflow="ellipsis")
        label = short.plain + ":"
    return label, 0, kept


class Bars(Progress):
    """rich's ``Progress`` drawing one line per visible task, laid out by ``fit``; refreshed by the caller
    (no refresh thread: the bars move when work is reported, at most ten times a second)."""

    def __init__(self, describe: Describe, stream: IO[str] | None, width: int | None, get_time: Callable[[], float]):
        console = Console(
            file=stream,  # None: sys.stderr at the time of writing
            stderr=stream is None,
            force_terminal=True,  # the caller decided it is a terminal (or a test says so)
            width=width,
            highlight=False,
        )
        super().__init__(
            console=console,
            auto_refresh=False,
            transient=True,  # a stage that ends prints its own final line; the live area then goes away
            redirect_stdout=False,  # stdout is the command's output (a summary, JSON), never the bars'
            redirect_stderr=stream is None,  # other writes to sys.stderr land above the bars, not inside them
            get_time=get_time,
        )
        self.describe = describe

    def named(self, name: str) -> Task | None:
        """The running task of stage ``name`` (stage names are unique among running stages)."""
        return next((task for task in self.tasks if task.description == name), None)

    def make_tasks_table(self, tasks: Iterable[Task]) -> Table:  # rich calls it for the live area
        grid = Table.grid()
        grid.add_column()
        for task in tasks:
            if task.visible:
                grid.add_row(self.line(task, final=False))
        return grid

    def line(self, task: Task, final: bool) -> RenderableType:
        """One stage's line: '[toolkg] name <bar> counts, rate, ETA', to the terminal's width less one column
        (a line that fills the last column wraps on some terminals, and the redraw then leaves a copy)."""
        width = (self.console.width or 80) - 1  # 0: COLUMNS=0 in the environment, which rich takes as is
        parts = self.describe(task, final)
        label, bar, text = fit(width, "[toolkg] " + task.description, parts, task.total is not None)
        row = Table.grid(padding=(0, 1))
        row.add_column(no_wrap=True)
        cells: list[RenderableType] = [Text(label)]
        if bar:
            row.add_column(width=bar)
            # Green once full: rich's own finished colour comes out grey, like the empty track, on 16 colours.
            cells.append(ProgressBar(total=task.total, completed=task.completed, width=bar, finished_style="green"))
        row.add_column(no_wrap=True, overflow="ellipsis")
        cells.append(Text(text, no_wrap=True, overflow="ellipsis"))
        row.add_row(*cells)
        return row

    def print_line(self, task: Task, final: bool) -> None:
        """Print a stage's line for good: above the live bars while they run, else where the cursor is."""
        self.console.print(self.line(task, final))
