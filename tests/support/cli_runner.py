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
import tempfile
from collections.abc import Iterator
from pathlib import Path

# Modules that take sys.stderr as a default argument when first imported: imported here, before a run swaps the
# streams, or the first run to import them would leave its (then closed) stderr as their default for the session.
import mcp.client.stdio  # noqa: F401  (stdio_client(errlog=sys.stderr))


class _Pipe(io.TextIOWrapper):
    """A captured stream that acts as a pipe does: text over bytes (``.buffer``, which `toolkg export` writes),
    UTF-8, no terminal (``isatty()`` False), and a real file descriptor, so that the processes a command starts
    (an MCP server over stdio writes its log to toolkg's stderr) write into it as into a pipe they inherit.
    Its text is read back as ``subprocess.run(text=True)`` decodes a pipe's."""

    def __init__(self, text: str = "") -> None:
        super().__init__(tempfile.TemporaryFile(), encoding="utf-8", write_through=True)
        if text:
            self.write(text)
            self.seek(0)

    def write(self, text: str) -> int:
        written = super().write(text)
        self.buffer.flush()  # in order with what child processes write to the same file
        return written

    def isatty(self) -> bool:
        return False

    def close(self) -> None:  # a command may close stderr (after a broken pipe): its text is still the result
        self.flush()

    def text(self) -> str:
        self.flush()
        self.seek(0)  # the wrapper's seek rewinds its buffer too (typeshed's .buffer has no seek)
        raw = self.buffer.read()
        super().close()
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
            io.TextIOWrapper.close(stdin)
    return subprocess.CompletedProcess(["toolkg", *args], code, stdout.text(), stderr.text())
