"""`toolkg build`'s progress lines on stderr, as plain lines and on a terminal (a pty)."""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import CASES, TOOLKG
from tests.support.pty_screen import PROGRESS_LINE, Screen, drawn_lines, run_on_pty, terminal_text

MANIFESTS = 100  # ingest reports every batch of 32: 32, 64, 96, 100


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    """A hundred small manifests (one server of two tools each, named after the file)."""
    folder = tmp_path / "catalog"
    folder.mkdir()
    for n in range(MANIFESTS):
        shutil.copy(CASES / "openai_bare.json", folder / f"mail{n:03d}.json")
    return folder


def test_build_prints_progress_lines_on_stderr_and_none_with_quiet(cli, prefect_api, catalog, tmp_path):
    started = time.perf_counter()
    loud = cli("build", str(catalog), "--store", str(tmp_path / "a"), "--no-links")
    assert loud.returncode == 0, loud.stderr
    lines = loud.stderr.splitlines()
    assert f"[toolkg] ingest: {MANIFESTS}/{MANIFESTS} manifests (100%)" in "\n".join(lines)
    assert any(re.match(rf"\[toolkg\] [^:]+: {2 * MANIFESTS}/{2 * MANIFESTS} tools \(100%\)", line) for line in lines)
    assert "\r" not in loud.stderr and "\x1b" not in loud.stderr and "[toolkg] ingest" not in loud.stdout
    # -q where the bars would be: stderr a terminal.
    quiet = [str(TOOLKG), "build", str(catalog), "--store", str(tmp_path / "b"), "--no-links", "-q"]
    code, _, raw = run_on_pty(quiet, 200, _env(prefect_api))
    terminal = terminal_text(raw)
    assert code == 0, terminal
    assert "[toolkg] " not in terminal and "\x1b" not in terminal and "\r" not in terminal, terminal
    assert not re.search(r"\d+/\d+ \w+ \(\d+%\)", terminal), terminal
    print(f"two builds in {time.perf_counter() - started:.1f}s")


def _env(prefect_api: str) -> dict[str, str]:
    return {**os.environ, "PREFECT_API_URL": prefect_api, "TERM": "xterm-256color"}


def _stage(line: str) -> str:
    """The stage a drawn progress line is for."""
    match = PROGRESS_LINE.fullmatch(line)
    assert match, f"not a progress line: {line!r}"
    return match["name"]


@pytest.mark.parametrize("columns", [0, 40])  # and 200, with 0 and 40 in detail: tests/unit/progress/test_pty.py
def test_build_on_a_terminal_redraws_one_bar_per_stage(prefect_api, catalog, tmp_path, columns):
    """stderr is a pseudo-terminal (stdout a pipe): bars redrawn in place, every drawn line whole at any width
    (0 columns: a terminal that reports no size, taken as 80), each stage's final line left once."""
    argv = [str(TOOLKG), "build", str(catalog), "--store", str(tmp_path / "s"), "--no-links"]
    code, stdout, raw = run_on_pty(argv, columns, _env(prefect_api))
    terminal = terminal_text(raw)
    assert code == 0, terminal
    assert b"\r" not in stdout and b"\x1b" not in stdout  # the summary (a pipe) has no bar in it
    drawn = [line for line in drawn_lines(terminal) if line.startswith("[toolkg] ")]
    broken = [line for line in drawn if not PROGRESS_LINE.fullmatch(line)]
    assert not broken, f"cut or garbled at {columns} columns: {broken}"
    ingest = [line for line in drawn if _stage(line) == "ingest"]
    assert len(ingest) >= 2, terminal  # drawn, then redrawn in place
    screen = Screen.replay(terminal)
    finals = [line for line in screen.text.split("\n") if line.startswith("[toolkg] ")]
    # Ours never reach the last column (Prefect's own notice, a line of its own, may be wider).
    assert not screen.unknown and all(len(line) < (columns or 80) for line in drawn + finals), screen.text
    assert len({_stage(line) for line in finals}) == len(finals)  # one line per stage
    if columns == 40:  # no room for a bar
        assert "[toolkg] ingest: 100/100 manifests" in finals, screen.text
    else:
        ingest_done = r"\[toolkg\] ingest ━+ 100/100 manifests \(100%\) in \d+s, [\d.]+/s"
        assert any(re.fullmatch(ingest_done, line) for line in finals), screen.text
    print(f"--- {columns} columns:\n{screen.text}")
