"""`toolkg build`'s progress lines on stderr, as plain lines and on a terminal (a pty)."""

from __future__ import annotations

import fcntl
import os
import re
import select
import shutil
import struct
import subprocess
import termios
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import CASES, TOOLKG

MANIFESTS = 100  # ingest reports every batch of 32: 32, 64, 96, 100


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    """A hundred small manifests (one server of two tools each, named after the file)."""
    folder = tmp_path / "catalog"
    folder.mkdir()
    for n in range(MANIFESTS):
        shutil.copy(CASES / "openai_bare.json", folder / f"mail{n:03d}.json")
    return folder


def test_build_prints_progress_lines_on_stderr_and_none_with_quiet(cli, catalog, tmp_path):
    started = time.perf_counter()
    loud = cli("build", str(catalog), "--store", str(tmp_path / "a"), "--no-links")
    assert loud.returncode == 0, loud.stderr
    lines = loud.stderr.splitlines()
    assert f"[toolkg] ingest: {MANIFESTS}/{MANIFESTS} manifests (100%)" in "\n".join(lines)
    assert any(re.match(rf"\[toolkg\] [^:]+: {2 * MANIFESTS}/{2 * MANIFESTS} tools \(100%\)", line) for line in lines)
    assert "\r" not in loud.stderr and "[toolkg] ingest" not in loud.stdout
    quiet = cli("build", str(catalog), "--store", str(tmp_path / "b"), "--no-links", "-q")
    assert quiet.returncode == 0, quiet.stderr
    assert "[toolkg] ingest" not in quiet.stderr and not re.search(r"\d+/\d+ \w+ \(\d+%\)", quiet.stderr)
    print(f"two builds in {time.perf_counter() - started:.1f}s")


def test_build_on_a_terminal_redraws_one_bar_per_stage(prefect_api, catalog, tmp_path):
    """stderr is a pseudo-terminal (stdout a pipe): '\\r' redraws, a rate, each stage ending its line."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "PREFECT_API_URL": prefect_api}
    env.pop("COLUMNS", None)
    # Direct, not the cli fixture: stderr must be a pseudo-terminal, read while the build runs.
    process = subprocess.Popen(
        [str(TOOLKG), "build", str(catalog), "--store", str(tmp_path / "s"), "--no-links"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    received: list[bytes] = []

    def read() -> None:
        while True:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                if process.poll() is not None:
                    return
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                return
            if not data:
                return
            received.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    stdout, _ = process.communicate(timeout=300)
    reader.join(timeout=10)
    os.close(master)
    assert process.returncode == 0, b"".join(received).decode(errors="replace")
    terminal = b"".join(received).decode("utf-8", errors="replace").replace("\r\n", "\n")  # the tty's onlcr
    assert b"\r" not in stdout  # the summary (a pipe) has no bar in it
    ingest = [draw for draw in terminal.split("\r") if draw.startswith("[toolkg] ingest [")]
    assert len(ingest) >= 2, terminal  # drawn, then redrawn in place
    assert re.search(rf"\] {MANIFESTS}/{MANIFESTS} manifests \(100%\) in \d+s, [\d.]+/s\n", ingest[-1]), ingest
    assert all("\n" not in draw for draw in ingest[:-1])  # one line per stage, ended once
    assert all(len(line) < 120 for line in terminal.split("\n") for line in line.split("\r"))
