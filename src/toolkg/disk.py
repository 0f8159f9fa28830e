"""Disk faults, wherever they surface: a full disk and a folder toolkg may not write.

A full disk reaches toolkg in several shapes: an ``OSError`` with errno ENOSPC or EDQUOT (Python's own
writes), an ``OSError`` with no errno whose message says "No space left on device" (RocksDB, through
pyoxigraph), SQLite's SQLITE_FULL, or SQLite's bare "disk I/O error" when its shared-memory file could not
grow on a file system with no room left. ``is_disk_full`` knows them all. No item is at fault and the next
item would fail the same way, so a full disk is never quarantined (``toolkg.failures.quarantine``): the run
stops with ``DiskFullError``, one line naming what was being written.

A read-only folder (a read-only mount, or permissions) is ``is_read_only``; ``writable`` asks before
opening, where asking is cheaper than failing halfway.

>>> import errno
>>> is_disk_full(OSError(errno.ENOSPC, "No space left on device", "/s/runs/x/summary.json"))
True
>>> rocks = OSError("IO error: No space left on device: While appending to file: /s/oxigraph/000030.sst: "
...               "No space left on device")
>>> is_disk_full(rocks), written_path(rocks, "/s")
(True, '/s/oxigraph/000030.sst')
>>> str(disk_full_error(rocks, "/s"))
'disk full while writing /s/oxigraph/000030.sst: free space and rerun'
>>> is_read_only(OSError("IO error: While open a file for appending: /s/oxigraph/LOG: Read-only file system"))
True
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import sqlite3
import sys
from pathlib import Path

from toolkg.errors import DiskFullError

_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
_NO_SPACE_TEXT = ("no space left on device", "disk quota exceeded", "database or disk is full")
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
_READ_ONLY_TEXT = ("read-only file system", "permission denied", "readonly database")
# SQLite says only "disk I/O error" when its shared-memory file cannot grow: on a file system with less room
# than this left, that is a full disk.
LOW_SPACE_BYTES = 1 << 20
# RocksDB names the file in its message: "IO error: <why>: While appending to file: <path>: <why>".
_ROCKSDB_FILE = re.compile(r"While [^:]*: (.+?): [^:]+$")


def is_disk_full(exc: BaseException, path: str | Path | None = None) -> bool:
    """Whether ``exc`` says the disk is full; ``path``, the file being written, lets a bare SQLite I/O error
    count when its file system has no room left."""
    if isinstance(exc, DiskFullError):
        return True
    if isinstance(exc, OSError) and exc.errno in _NO_SPACE:
        return True
    if not isinstance(exc, OSError | sqlite3.Error):
        return False
    if any(text in str(exc).lower() for text in _NO_SPACE_TEXT):
        return True
    code = getattr(exc, "sqlite_errorcode", 0) or 0
    return path is not None and code & 0xFF == sqlite3.SQLITE_IOERR and free_bytes(path) < LOW_SPACE_BYTES


def is_read_only(exc: BaseException) -> bool:
    """Whether ``exc`` says a file or folder may not be written (a read-only mount, or permissions)."""
    if isinstance(exc, OSError) and exc.errno in _READ_ONLY:
        return True
    return isinstance(exc, OSError | sqlite3.Error) and any(t in str(exc).lower() for t in _READ_ONLY_TEXT)


def why(exc: BaseException) -> str:
    """The operating system's words for ``exc`` ("Read-only file system"), else its message."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    for text in (*_READ_ONLY_TEXT, *_NO_SPACE_TEXT):
        if text in str(exc).lower():
            return text[0].upper() + text[1:]
    return str(exc)


def written_path(exc: BaseException, default: str | Path) -> str:
    """The file ``exc`` names (Python's ``filename``, or the path in RocksDB's message), else ``default``."""
    if isinstance(exc, OSError) and exc.filename:
        return str(exc.filename)
    found = _ROCKSDB_FILE.search(str(exc))
    return found.group(1) if found else str(default)


def disk_full_error(exc: BaseException, writing: str | Path) -> DiskFullError | None:
    """``exc`` as the one-line ``DiskFullError`` (naming the file it names, else ``writing``), or None when
    it is not a full disk."""
    if isinstance(exc, DiskFullError):
        return exc
    if not is_disk_full(exc, writing):
        return None
    return DiskFullError(written_path(exc, writing))


def free_bytes(path: str | Path) -> int:
    """Free bytes on the file system holding ``path`` (or its nearest existing folder); a large number when
    that cannot be told."""
    try:
        return shutil.disk_usage(_existing(Path(path))).free
    except OSError:
        return sys.maxsize


def writable(path: str | Path) -> bool:
    """Whether this process may write ``path`` (a missing one: whether it may be made in its nearest existing
    folder). A read-only mount says no even to root."""
    return os.access(_existing(Path(path)), os.W_OK)


def why_not_writable(path: str | Path) -> str:
    """ "Read-only file system" when ``path`` is on a read-only mount, else "Permission denied"."""
    try:
        read_only_mount = bool(os.statvfs(_existing(Path(path))).f_flag & os.ST_RDONLY)
    except OSError:
        read_only_mount = False
    return "Read-only file system" if read_only_mount else "Permission denied"


def _existing(path: Path) -> Path:
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


_told: set[str] = set()


def notice(message: str) -> None:
    """One line on stderr, once per process per message: a command carrying on in a degraded way says so."""
    if message not in _told:
        _told.add(message)
        # written, not print()ed: inside a Prefect flow print() becomes a log record at INFO, which toolkg hides
        sys.stderr.write(f"toolkg: notice: {message}\n")
        sys.stderr.flush()
