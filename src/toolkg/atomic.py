"""Output files that appear whole or not at all: written beside the target, renamed at the end.

>>> import tempfile, pathlib
>>> target = pathlib.Path(tempfile.mkdtemp()) / "out.jsonl"
>>> with atomic_output(target) as out:
...     _ = out.write("{}\\n")
>>> target.read_text()
'{}\\n'
>>> try:
...     with atomic_output(target) as out:
...         _ = out.write("half")
...         raise RuntimeError("boom")
... except RuntimeError:
...     pass
>>> target.read_text(), sorted(p.name for p in target.parent.iterdir())  # the old file, no leftovers
('{}\\n', ['out.jsonl'])
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


@contextmanager
def atomic_output(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """A file to write ``path``'s new content to; on success it replaces ``path`` in one rename, on any
    failure it is removed and ``path`` stays as it was. ``mode`` is ``"w"`` (UTF-8 text) or ``"wb"``."""
    target = Path(path)
    scratch = target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    handle = open(scratch, mode.replace("w", "x"), **({} if "b" in mode else {"encoding": "utf-8"}))  # noqa: SIM115
    try:
        with handle:
            yield handle
        os.replace(scratch, target)
    except BaseException:
        with contextlib.suppress(OSError):
            scratch.unlink()
        raise
