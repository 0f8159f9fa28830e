"""Loaded into every Python process of a fit (``benchmarks/training/models.py`` puts this folder first on
PYTHONPATH): logs each file the process opens inside the checkout, so the fit's record can list the data it
read, including what its ``toolkg build`` subprocesses and worker processes read.

An audit hook sees every ``open`` (builtins, io, os, pathlib) without the fit's code knowing; it writes one line
per open straight to a file descriptor (no Python-level ``open``, which would call the hook again), and a
forked child shares it (``O_APPEND`` keeps the lines whole).
"""

import os
import sys

_LOG_DIR = os.environ.get("TOOLKG_TRACE_READS")
_ROOT = os.environ.get("TOOLKG_TRACE_ROOT", "")
_SKIP = (os.sep + ".venv" + os.sep, os.sep + "__pycache__" + os.sep, os.sep + ".git" + os.sep)
_WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _hook(event: str, args: tuple) -> None:
    if event != "open":
        return
    path, mode, flags = args
    if isinstance(path, int):
        return
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    full = os.path.abspath(os.fspath(path))
    if not full.startswith(_ROOT) or any(part in full for part in _SKIP) or full.endswith(".py"):
        return
    written = any(c in mode for c in "wax+") if isinstance(mode, str) else bool(flags & _WRITES)
    line = f"{'w' if written else 'r'}\t{full}\n"
    os.write(_FD, line.encode("utf-8", "surrogateescape"))


if _LOG_DIR and _ROOT:
    _ROOT = os.path.join(os.path.abspath(_ROOT), "")
    _FD = os.open(os.path.join(_LOG_DIR, f"{os.getpid()}.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.addaudithook(_hook)
