"""Progress on stderr: plain throttled lines off a terminal, one redrawn bar per stage on one, none with -q."""

from __future__ import annotations

import builtins
import io

from toolkg import progress
from toolkg.progress import Progress

MANIFESTS = 100  # ingest reports every batch of 32: 32, 64, 96, 100


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(tty: bool) -> tuple[Progress, io.StringIO, Clock]:
    out, clock = io.StringIO(), Clock()
    return Progress(stream=out, tty=tty, clock=clock, width=100), out, clock


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
    draws = text.split("\r")[1:]
    assert len(draws) == 40 and text.count("\n") == 1 and text.endswith("\n")
    assert draws[0].startswith("[toolkg] embed [....") and draws[0].endswith("] 10/400 texts (2%), 80.0/s, ETA 5s")
    final = "[toolkg] embed [" + "#" * 30 + "] 400/400 texts (100%) in 5s, 80.0/s"
    assert draws[-1].endswith("\n") and draws[-1].rstrip() == final  # blanks wipe a longer previous draw
    assert all(len(d.rstrip("\n")) < 100 for d in draws)  # never reaches the terminal's last column


def test_terminal_redraws_are_throttled_to_ten_a_second():
    bar, out, clock = make(tty=True)
    for step in range(1, 321):  # 320 reports in 10 s
        clock.now = 1000 + step / 32
        bar.report("load", step, 320, "tools")
    draws = out.getvalue().split("\r")[1:]
    assert 80 <= len(draws) <= 101 and draws[-1].endswith("320/320 tools (100%) in 10s, 32.0/s\n")


def test_terminal_bar_of_another_stage_starts_on_a_new_line():
    bar, out, clock = make(tty=True)
    bar.start("build", 10, "tools")
    clock.now += 1
    bar.report("build", 5, 10, "tools")
    bar.report("embed", 100, 1000, "texts")  # a nested stage while 'build' is on screen
    clock.now += 1
    bar.report("embed", 1000, 1000, "texts")
    bar.report("build", 10, 10, "tools")
    lines = out.getvalue().split("\n")
    assert "build" in lines[0] and "5/10" in lines[0]
    assert "embed" in lines[1] and "1000/1000" in lines[1] and "build" not in lines[1]
    assert "10/10 tools" in lines[2] and lines[3] == ""


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
