"""Progress on stderr: plain throttled lines off a terminal, one redrawn bar per running stage on one (rich's
live display, written to a StringIO that says it is a terminal), none with -q."""

from __future__ import annotations

import builtins
import io
import itertools

import pytest

from tests.support.pty_screen import PROGRESS_LINE, SGR, Screen, drawn_lines
from toolkg import progress
from toolkg.progress import PREFIX, Progress
from toolkg.progress_bars import fit

MANIFESTS = 100  # ingest reports every batch of 32: 32, 64, 96, 100


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(tty: bool, width: int = 100) -> tuple[Progress, io.StringIO, Clock]:
    out, clock = io.StringIO(), Clock()
    return Progress(stream=out, tty=tty, clock=clock, width=width), out, clock


@pytest.fixture(autouse=True)
def colour_terminal(monkeypatch):
    """rich redraws only where TERM is not 'dumb' (whatever ``tty=`` says): the tests' terminal is a real one."""
    monkeypatch.setenv("TERM", "xterm-256color")
    for name in ("TTY_INTERACTIVE", "TTY_COMPATIBLE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)


# -- unit: throttling and rendering -------------------------------------------------------------------


def test_plain_lines_are_throttled_to_one_per_two_seconds_plus_the_final_one():
    bar, out, clock = make(tty=False)
    bar.start("ingest", 1000, "manifests")
    for done in range(1, 1001):  # 10 s of work, one item every 10 ms
        clock.now = 1000 + done / 100
        bar.report("ingest", done, 1000, "manifests")
    lines = out.getvalue().splitlines()
    assert len(lines) == 5  # after 2, 4, 6, 8 s, and the final one at 10 s
    assert lines[0] == "[toolkg] ingest: 200/1000 manifests (20%), 100/s, ETA 8s"
    assert lines[-1] == "[toolkg] ingest: 1000/1000 manifests (100%) in 10s, 100/s"
    assert "\r" not in out.getvalue()


def test_a_short_stage_prints_only_its_final_line_and_a_stage_can_run_again():
    bar, out, clock = make(tty=False)
    for _ in range(2):  # e.g. "eval bm25" then the same label again: each run is a stage of its own
        for done in range(1, 11):
            clock.now += 1 / 16
            bar.report("eval", done, 10, unit="queries")
    assert out.getvalue().splitlines() == ["[toolkg] eval: 10/10 queries (100%) in 1s, 16.0/s"] * 2


def test_stages_are_throttled_independently_and_unknown_totals_end_with_done():
    bar, out, clock = make(tty=False)
    bar.start("a", None, "texts")
    bar.start("b", 50, "tools")
    for step in range(1, 31):
        clock.now = 1000 + step / 10
        bar.advance("a", 2)
        bar.report("b", step, 50, "tools")
    bar.done("a")
    bar.done("b")  # ends 'b' where it stands (an error, say): its final line says so
    lines = out.getvalue().splitlines()
    assert [line for line in lines if line.startswith("[toolkg] a:")] == [
        "[toolkg] a: 40 texts, 20.0/s",
        "[toolkg] a: 60 texts in 3s, 20.0/s",
    ]
    assert [line for line in lines if line.startswith("[toolkg] b:")] == [
        "[toolkg] b: 20/50 tools (40%), 10.0/s, ETA 3s",
        "[toolkg] b: 30/50 tools (60%) in 3s, 10.0/s",
    ]


def test_disabled_and_trivial_totals_print_nothing():
    bar, out, clock = make(tty=False)
    bar.report("one", 1, 1)  # a total of one is no progress to show
    bar.enabled = False
    bar.start("ingest", 10)
    for done in range(1, 11):
        clock.now += 3
        bar.report("ingest", done, 10)
    bar.done("ingest")
    assert out.getvalue() == ""


def test_terminal_bar_redraws_in_place_with_rate_and_eta_and_ends_its_line():
    bar, out, clock = make(tty=True)
    with progress.Progress.stage(bar, "embed", 400, "texts") as handle:
        for step in range(1, 41):
            clock.now = 1000 + step / 8
            handle.advance(10)
    text = out.getvalue()
    draws = drawn_lines(text)
    # 39 redraws, rich's own on stopping (then erased), the final line
    assert len(draws) == 41 and all(PROGRESS_LINE.fullmatch(d) for d in draws)
    assert draws[0].startswith("[toolkg] embed ") and draws[0].endswith(" 10/400 texts (2%)")  # no rate yet
    assert draws[1].endswith(" 20/400 texts (5%), 80.0/s, ETA 5s")  # rich's rate over the reports so far
    final = "[toolkg] embed " + "━" * 30 + " 400/400 texts (100%) in 5s, 80.0/s"
    screen = Screen.replay(text)
    assert screen.text == final and text.endswith("\n")  # one line left, ended
    assert screen.widest < 100 and not screen.unknown  # never reaches the terminal's last column


def test_terminal_redraws_are_throttled_to_ten_a_second():
    bar, out, clock = make(tty=True)
    for step in range(1, 321):  # 320 reports in 10 s
        clock.now = 1000 + step / 32
        bar.report("load", step, 320, "tools")
    draws = drawn_lines(out.getvalue())
    assert 80 <= len(draws) <= 102 and draws[-1].endswith("320/320 tools (100%) in 10s, 32.0/s")


def test_a_stage_ending_inside_another_prints_its_line_above_the_running_bar():
    bar, out, clock = make(tty=True)
    bar.start("build", 10, "tools")
    clock.now += 1
    bar.report("build", 5, 10, "tools")
    bar.report("embed", 100, 1000, "texts")  # a nested stage while 'build' is on screen
    both = Screen.replay(out.getvalue()).text.split("\n")
    assert [line.split()[1] for line in both] == ["build", "embed"]  # two bars, one line each
    clock.now += 1
    bar.report("embed", 1000, 1000, "texts")
    bar.report("build", 10, 10, "tools")
    assert Screen.replay(out.getvalue()).text.split("\n") == [
        "[toolkg] embed " + "━" * 30 + " 1000/1000 texts (100%) in 1s, 900/s",
        "[toolkg] build " + "━" * 30 + " 10/10 tools (100%) in 2s, 5.00/s",
    ]


def test_close_leaves_the_line_of_a_stage_that_never_ended():
    """An interrupted build: at exit the bar stays where it stopped, and the prompt starts on a new line."""
    bar, out, clock = make(tty=True)
    for done in (10, 20, 30):
        clock.now += 1
        bar.report("ingest", done, 70)
    bar.close()
    bar.close()  # twice (atexit after an explicit close) is harmless
    text = out.getvalue()
    stopped = " 30/70 manifests (42%), 10.0/s, ETA 4s"
    assert Screen.replay(text).text == "[toolkg] ingest " + "━" * 12 + "╸" + "━" * 17 + stopped
    assert SGR.sub("", text).endswith("\n")  # then the cursor shown again


NAMES = ["ingest", "extract, validate, load", "list live MCP servers", "eval bm25"]  # stage names in use


def test_a_line_is_laid_out_whole_at_every_width_from_30_columns():
    """Never a count cut in the middle: a bar when there is room, else fewer clauses, else a shorter name."""
    parts = [  # in flight, and done
        ["100/2000 tools", " (5%)", ", 12.5/s", ", ETA 2m32s"],
        ["2000/2000 tools", " (100%)", " in 2m40s", ", 12.5/s"],
    ]
    for name, clauses, columns in itertools.product(NAMES, parts, range(30, 201)):
        label, size, text = fit(columns - 1, PREFIX + name, clauses, True)
        line = label + (" " + "━" * size if size else "") + " " + text
        assert PROGRESS_LINE.fullmatch(line) and len(line) < columns, (columns, line)
        assert size == 0 or 10 <= size <= 30


@pytest.mark.parametrize("columns", [30, 39, 40, 41, 79, 80, 120, 200])
def test_rich_draws_the_line_laid_out(columns):
    for name in NAMES:
        bar, out, clock = make(tty=True, width=columns)
        bar.start(name, 2000, "tools")
        for done in (100, 1999, 2000):
            clock.now += 1
            bar.report(name, done, 2000, "tools")
        for line in drawn_lines(out.getvalue()):
            assert PROGRESS_LINE.fullmatch(line) and len(line) < columns, (columns, line)
        assert Screen.replay(out.getvalue()).widest < columns


def test_module_report_writes_to_stderr_without_print(monkeypatch, capsys):
    """Prefect's log_prints swaps print() for a logger: progress must not go through print."""

    def no_print(*args, **kwargs):
        raise AssertionError("progress used print()")

    monkeypatch.setattr(builtins, "print", no_print)
    monkeypatch.setattr(progress, "_default", Progress(tty=False))
    progress.report("load", 3, 3)  # the existing signature: stage, done, total, unit="manifests"
    progress.enable(False)
    progress.report("load", 3, 3)
    assert capsys.readouterr().err == "[toolkg] load: 3/3 manifests (100%)\n"
