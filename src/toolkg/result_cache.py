"""A disk cache of deterministic results (offline extractions, SHACL verdicts): JSON text by key, in SQLite.

The offline extractor's rules are a pure function of a tool's document and of their own code, and a
SHACL verdict of the rows checked and the shapes, so a result computed once (keyed by both:
``result_key``) is valid for any store, any run: a rebuild, a ``--force`` run or a fresh store fed
the same catalog reads it instead of computing it again (and never pays spaCy's or pySHACL's
start-up when nothing is new).
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from urllib.parse import quote

from toolkg.disk import disk_full_error, is_disk_full, is_read_only, notice, why_not_writable, writable
from toolkg.errors import DiskFullError

_SCHEMA = "CREATE TABLE IF NOT EXISTS result (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
_WRITES = ("insert", "replace", "update", "delete", "create", "drop", "alter")


class CacheConnection(sqlite3.Connection):
    """A cache file's connection. A write the full disk refuses raises ``DiskFullError`` naming the file (SQLite
    alone would say "disk I/O error"); on a file toolkg may not write (``dropping_writes``), writes are dropped, so
    what the cache would keep is computed again next time instead of failing the command."""

    path: Path
    dropping_writes: bool = False

    def execute(self, sql: str, parameters=(), /) -> sqlite3.Cursor:
        return self._run(super().execute, sql, parameters)

    def executemany(self, sql: str, parameters, /) -> sqlite3.Cursor:
        return self._run(super().executemany, sql, parameters)

    def _run(self, method, sql: str, parameters) -> sqlite3.Cursor:
        if self.dropping_writes and sql.lstrip()[:7].lower().startswith(_WRITES):
            return self.cursor()  # an empty cursor: the write is dropped
        try:
            return method(sql, parameters)
        except sqlite3.OperationalError as exc:
            full = disk_full_error(exc, self.path)
            if full is None:
                raise
            raise full from exc


def open_cache_db(path: str | Path, schema: str) -> CacheConnection:
    """A cache's SQLite file (its folder made), shared by threads that lock around it: autocommit,
    write-ahead log, ``schema`` created if missing. Every on-disk cache of toolkg opens its file here.

    A file toolkg cannot open for writing (a read-only store or cache folder, or a full disk) is read as it is,
    new results dropped; one that does not exist is a cache in memory for this process. Either says so once on
    stderr. A write that meets a full disk later is ``DiskFullError``."""
    path = Path(path)
    db = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = _connect(str(path), path)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(schema)
        return db
    except (OSError, sqlite3.Error, DiskFullError) as exc:
        if db is not None:
            db.close()
        full = is_disk_full(exc, path)
        if not full and writable(path) and not is_read_only(exc):
            raise
        reason = "disk full" if full else why_not_writable(path)
    return _read_only_cache(path, schema, reason)


def _connect(database: str, path: Path, *, uri: bool = False) -> CacheConnection:
    db = sqlite3.connect(database, uri=uri, check_same_thread=False, isolation_level=None, factory=CacheConnection)
    db.path = path
    return db


def _read_only_cache(path: Path, schema: str, reason: str) -> CacheConnection:
    """The cache at ``path`` read as it is (opened immutable: this process writes it nowhere), or one in memory
    when it cannot be read."""
    table = re.search(r"EXISTS\s+(\w+)", schema)
    if path.is_file():
        try:
            db = _connect(f"file:{quote(str(path.resolve()))}?immutable=1", path, uri=True)
            if table is None or db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table.group(1),)).fetchone():
                db.dropping_writes = True
                notice(f"cache {path} cannot be written ({reason}): reading it as it is, keeping nothing new")
                return db
            db.close()
        except sqlite3.Error:
            pass  # unreadable as well: a cache in memory
    db = _connect(":memory:", path)
    db.execute(schema)
    notice(f"cache {path} cannot be written ({reason}): this process keeps its results in memory only")
    return db


def result_key(code: str, input_hash: str) -> str:
    return hashlib.sha256(f"{code}\x1f{input_hash}".encode()).hexdigest()


class ResultCache:
    """Shared by threads (one lock); a file that cannot be opened or read is a cache that misses."""

    def __init__(self, path: str | Path) -> None:
        self._lock = threading.Lock()
        self._db = open_cache_db(path, _SCHEMA)

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        unique = sorted(set(keys))
        with self._lock:
            for start in range(0, len(unique), 500):  # SQLite's bound-parameter limit
                chunk = unique[start : start + 500]
                marks = ",".join("?" * len(chunk))
                found.update(self._db.execute(f"SELECT key, value FROM result WHERE key IN ({marks})", chunk))
        return found

    def put_many(self, items: Iterable[tuple[str, str]]) -> None:
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO result VALUES (?, ?)", items)
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()
