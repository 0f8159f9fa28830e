"""A disk cache of deterministic results (offline extractions, SHACL verdicts): JSON text by key, in SQLite.

The offline extractor's rules are a pure function of a tool's document and of their own code, and a
SHACL verdict of the rows checked and the shapes, so a result computed once (keyed by both:
``result_key``) is valid for any store, any run: a rebuild, a ``--force`` run or a fresh store fed
the same catalog reads it instead of computing it again (and never pays spaCy's or pySHACL's
start-up when nothing is new).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

_SCHEMA = "CREATE TABLE IF NOT EXISTS result (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


def open_cache_db(path: str | Path, schema: str) -> sqlite3.Connection:
    """A cache's SQLite file (its folder made), shared by threads that lock around it: autocommit,
    write-ahead log, ``schema`` created if missing. Every on-disk cache of toolkg opens its file here."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(schema)
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
