"""Real file-system faults for tests: a tmpfs of a few MB (a disk that fills up) and a read-only bind mount.

Both need mount(2), which root in a sandbox usually may do. Where it may not (or ``TOOLKG_TEST_NO_MOUNT=1``
asks to behave as if): ``small_disk`` says so (the tests then inject ENOSPC through ``TOOLKG_FAULT`` at the
same point), and ``read_only`` falls back to permissions, which bind every user but root (as root without
mount, the test is skipped: nothing else would stop root's writes).
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@functools.cache
def can_mount() -> bool:
    """Whether this process may mount (a 1 MB tmpfs, mounted and unmounted at once)."""
    if os.environ.get("TOOLKG_TEST_NO_MOUNT") or shutil.which("mount") is None or os.geteuid() != 0:
        return False  # TOOLKG_TEST_NO_MOUNT=1 runs the fallbacks (injected ENOSPC, permissions) where mount works
    with tempfile.TemporaryDirectory(prefix="toolkg-mount-") as probe:
        if _run("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", probe) != 0:
            return False
        _unmount(Path(probe))
    return True


@contextmanager
def small_disk(folder: Path, megabytes: int) -> Iterator[bool]:
    """``folder`` on a tmpfs of ``megabytes`` while the block runs (True), or a plain folder (False) when
    this process may not mount."""
    folder.mkdir(parents=True, exist_ok=True)
    if not can_mount():
        yield False
        return
    assert _run("mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(folder)) == 0
    try:
        yield True
    finally:
        _unmount(folder)


@contextmanager
def read_only(folder: Path) -> Iterator[str]:
    """``folder`` read-only while the block runs: bound read-only onto itself ("bind mount"), else its
    permissions taken away ("permissions"); skipped as root without mount."""
    if can_mount():
        assert _run("mount", "--bind", str(folder), str(folder)) == 0
        try:
            assert _run("mount", "-o", "remount,bind,ro", str(folder)) == 0
            yield "bind mount"
        finally:
            _unmount(folder)
        return
    if os.geteuid() == 0:
        pytest.skip("root without mount(2): nothing makes a folder read-only for root")
    modes = {path: path.stat().st_mode for path in [folder, *folder.rglob("*")]}
    for path, mode in modes.items():
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        yield "permissions"
    finally:
        for path, mode in modes.items():
            path.chmod(mode)


def _unmount(folder: Path) -> None:
    # Lazy: a process the test started (an endpoint's Oxigraph) may still hold a file there for a moment.
    _run("umount", "-l", str(folder))


def _run(*command: str) -> int:
    return subprocess.run(command, capture_output=True, check=False).returncode
