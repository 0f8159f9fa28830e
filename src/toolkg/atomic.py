"""Output files that appear whole or not at all: written beside the target, flushed to disk, renamed at the end.

A reader (another process, or the next one after a power cut) sees the old file or the whole new one, never a
part: the new content is fsync'ed before the rename and the folder after it. A write that fails (a full disk)
leaves the old file and no scratch file behind, and a full disk is one line naming the file
(``toolkg.errors.DiskFullError``).

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

from toolkg.disk import disk_full_error


@contextmanager
def atomic_output(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """A file to write ``path``'s new content to; on success it replaces ``path`` in one rename, on any
    failure it is removed and ``path`` stays as it was. ``mode`` is ``"w"`` (UTF-8 text) or ``"wb"``."""
    target = Path(path)
    scratch = target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        encoding = None if "b" in mode else "utf-8"
        with open(scratch, mode.replace("w", "x"), encoding=encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(scratch, target)
        fsync_folder(target.parent)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            scratch.unlink()
        full = disk_full_error(exc, target)
        if full is None:
            raise
        raise full from exc


def write_atomically(path: str | Path, text: str) -> None:
    """``path`` holds ``text`` (UTF-8) whole, or keeps what it held (``atomic_output``)."""
    with atomic_output(path) as out:
        out.write(text)


def fsync_folder(folder: str | Path) -> None:
    """Make a rename in ``folder`` durable (where the platform allows opening a folder)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass  # some file systems refuse to fsync a folder; the rename itself is still atomic
    finally:
        os.close(descriptor)
