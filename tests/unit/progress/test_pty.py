"""Progress in a real pseudo-terminal of 0, 40 and 200 columns, piped, and with -q: a small program drives
the progress API the way the pipeline does (a stage begun by its reports, one with a handle, a long name,
a stage inside another, a warning written to stderr meanwhile), and the test reads what the terminal shows.

0 columns is what an unconfigured pseudo-terminal reports (some containers, CI runners, `script`): it counts
as 80, the width every terminal tool assumes then; the bar used to be cut to '[toolkg] ingest: 2/'.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.pty_screen import PROGRESS_LINE, Screen, drawn_lines, run_on_pty, terminal_text

DRIVER = r"""
import sys
from toolkg import progress
now = [0.0]
progress._default.clock = lambda: now[0]  # time moves when the driver says: the same lines on a busy machine
progress.enable("-q" not in sys.argv)

def wait():
    now[0] += 0.125  # more than the 0.1 s between two redraws: every report is drawn

for done in (32, 64, 96, 100):                          # ingest: begun by its first report, ended by the last
    wait()
    progress.report("ingest", done, 100)
with progress.stage("embed", 400, "texts") as bar:      # the encoder: a stage with a handle
    for step in range(4):
        wait()
        bar.advance(100)
        if step == 1:
            print("warning: a slow batch", file=sys.stderr)  # another writer while the bar is up
progress.start("extract, validate, load", 200, "tools")  # the pipeline's longest name
for done in range(40, 201, 40):
    wait()
    if done == 80:                                       # a nested stage while this one is on screen
        for n in (50, 100):
            wait()
            progress.report("eval bm25", n, 100, "queries")
    progress.report("extract, validate, load", done, 200, "tools")
quiet_cost = "rich.progress" in sys.modules and "-q" in sys.argv  # -q (and the MCP server) spare rich's import
print("rich imported for nothing" if quiet_cost else "done")
"""


def _env(**extra: str) -> dict[str, str]:
    drop = ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, "TERM": "xterm-256color", **extra}


@pytest.fixture(scope="module")
def runs() -> dict[str, tuple[int, bytes, bytes]]:
    """Every run at once, in parallel (a run is a Python start-up, ~0.5 s): terminals of 0, 40 and 200
    columns, -q on a terminal, a TERM=dumb terminal, and stderr piped."""
    argv = [sys.executable, "-c", DRIVER]
    jobs = {
        "0": lambda: run_on_pty(argv, 0, _env(), timeout=60),
        "40": lambda: run_on_pty(argv, 40, _env(), timeout=60),
        "200": lambda: run_on_pty(argv, 200, _env(), timeout=60),
        "quiet": lambda: run_on_pty([*argv, "-q"], 200, _env(), timeout=60),
        "dumb": lambda: run_on_pty(argv, 80, _env(TERM="dumb"), timeout=60),
        "piped": lambda: _piped(argv),
    }
    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        return {name: future.result() for name, future in futures.items()}


def _piped(argv: list[str]) -> tuple[int, bytes, bytes]:
    done = subprocess.run(argv, capture_output=True, env=_env(), timeout=60)
    return done.returncode, done.stdout, done.stderr


WARNING = "warning: a slow batch"
# What stays on the screen: each stage's final line once, in the order the stages ended, the warning
# where it was written (during 'embed', above its bar). The clock is the driver's: the rates are exact.
SCREEN = {
    200: [
        "[toolkg] ingest " + "━" * 30 + " 100/100 manifests (100%) in 0s, 181/s",
        WARNING,
        "[toolkg] embed " + "━" * 30 + " 400/400 texts (100%) in 0s, 800/s",
        "[toolkg] eval bm25 " + "━" * 30 + " 100/100 queries (100%) in 0s, 400/s",
        "[toolkg] extract, validate, load " + "━" * 30 + " 200/200 tools (100%) in 1s, 229/s",
    ],
    40: [  # no room for a bar: the counts whole, then what fits; the stage's name shortened before a count
        "[toolkg] ingest: 100/100 manifests",
        WARNING,
        "[toolkg] embed: 400/400 texts (100%)",
        "[toolkg] eval bm25: 100/100 queries",
        "[toolkg] extract, valid…: 200/200 tools",
    ],
}
SCREEN[0] = [  # 0 columns: 80, room for every line whole, the bars narrower where the text is long
    "[toolkg] ingest " + "━" * 25 + " 100/100 manifests (100%) in 0s, 181/s",
    WARNING,
    "[toolkg] embed " + "━" * 30 + " 400/400 texts (100%) in 0s, 800/s",
    "[toolkg] eval bm25 " + "━" * 24 + " 100/100 queries (100%) in 0s, 400/s",
    "[toolkg] extract, validate, load " + "━" * 12 + " 200/200 tools (100%) in 1s, 229/s",
]


@pytest.mark.parametrize("columns", [0, 40, 200])
def test_bars_on_a_terminal_are_whole_lines_at_any_width(runs, columns):
    code, stdout, raw = runs[str(columns)]
    text = terminal_text(raw)
    assert code == 0 and stdout == b"done\n", text
    lines = drawn_lines(text)
    progress_lines = [line for line in lines if line != WARNING]
    broken = [line for line in progress_lines if not PROGRESS_LINE.fullmatch(line)]
    assert not broken, f"cut or garbled at {columns} columns: {broken}"
    assert len(progress_lines) >= 16, text  # drawn, redrawn in place, ended: not one final line per stage
    screen = Screen.replay(text)
    assert not screen.unknown, screen.unknown
    assert screen.widest < (columns or 80), screen.text  # never the last column (0 columns: taken as 80)
    assert screen.text.split("\n") == SCREEN[columns], screen.text


def test_piped_stderr_gets_plain_lines(runs):
    code, stdout, stderr = runs["piped"]
    assert code == 0 and stdout == b"done\n", stderr
    assert stderr.decode().splitlines() == [  # each stage lasts under 2 s: its final line only
        "[toolkg] ingest: 100/100 manifests (100%) in 0s, 181/s",
        WARNING,
        "[toolkg] embed: 400/400 texts (100%) in 0s, 800/s",
        "[toolkg] eval bm25: 100/100 queries (100%) in 0s, 400/s",
        "[toolkg] extract, validate, load: 200/200 tools (100%) in 1s, 229/s",
    ]


def test_quiet_on_a_terminal_writes_no_progress_and_no_control(runs):
    code, stdout, raw = runs["quiet"]
    assert code == 0 and stdout == b"done\n"
    assert terminal_text(raw) == WARNING + "\n"


def test_a_dumb_terminal_gets_plain_lines(runs):
    """TERM=dumb cannot redraw in place (rich will not animate there): the plain lines, as when piped."""
    code, stdout, raw = runs["dumb"]
    assert code == 0 and terminal_text(raw) == runs["piped"][2].decode(), repr(raw)
