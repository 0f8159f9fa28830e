"""The `toolkg` command run in this process, as sqlite-utils' tests run theirs through click's ``CliRunner``:
``toolkg.cli.main(argv)`` with its own standard streams, environment and working folder, the exit code as a
subprocess's would be, and everything it changed put back after.

A subprocess of the console script pays Python's and Prefect's start-up each time (a small ``toolkg build`` ~5 s
of which ~4 s are start-up on 2 cores); in-process a test pays the pipeline only. What only a real process shows
(signals, a kill at a fault point, a terminal on stdin, Prefect's own console logs, the installed script) stays
with ``cli_process`` in tests/conftest.py.

What the run sees, as a subprocess with piped streams would:
- ``sys.stdin``: the ``input`` text (empty without one), ``sys.stdout`` / ``sys.stderr``: fresh buffers; none
  is a terminal (``isatty()`` is False), as with ``subprocess.run(capture_output=True)``;
- ``os.environ``: the caller's, plus ``env`` (None unsets); the working folder: ``cwd``.
What it leaves behind is put back: the environment (handlers set Prefect's log level, thread counts), the
working folder, the streams, and the progress display's on/off switch (``-q`` turns it off).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path


class _Pipe(io.TextIOWrapper):
    """A captured stream that acts as a pipe does: text over bytes (``.buffer``, which `toolkg export` writes),
    UTF-8, no terminal (``isatty()`` False); its text read back as ``subprocess.run(text=True)`` decodes it."""

    def __init__(self, text: str = "") -> None:
        super().__init__(io.BytesIO(text.encode()), encoding="utf-8", write_through=True)

    def isatty(self) -> bool:
        return False

    def close(self) -> None:  # a command may close stderr (after a broken pipe): its text is still the result
        self.flush()

    def text(self) -> str:
        self.flush()
        raw = self.buffer.getvalue()  # type: ignore[attr-defined]
        return io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8").read()  # universal newlines, as text=True


@contextlib.contextmanager
def _process_state(env: dict[str, str | None], cwd: Path | None) -> Iterator[None]:
    from toolkg import progress

    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_progress = progress._default.enabled
    for name, value in env.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        progress._default.close()
        progress._default.enabled = saved_progress
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def run_in_process(
    *args: str, input: str | None = None, cwd: Path | None = None, env: dict[str, str | None] | None = None
) -> subprocess.CompletedProcess:
    """``toolkg ARGS...`` through ``toolkg.cli.main``: a CompletedProcess as ``subprocess.run`` would return.
    ``env``: variables to set on top of this process's, a None value unsetting one."""
    from toolkg.cli import main

    stdin, stdout, stderr = _Pipe(input or ""), _Pipe(), _Pipe()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    with _process_state(env or {}, cwd):
        sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
        try:
            code = main(list(args))
        except SystemExit as exit:  # argparse's usage errors, --help and --version
            code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
            if isinstance(exit.code, str):
                print(exit.code, file=stderr)
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved_streams
    return subprocess.CompletedProcess(["toolkg", *args], code, stdout.text(), stderr.text())
