"""Content-addressed cache of LLM extractions (SQLite, JSON values; never pickle).

The key is sha256 over model + prompt hash + ontology version + input hash: the endpoint's
address and the API key are deliberately not part of it (the same model served elsewhere
gives a reusable answer) and are never stored. Only validated extractions are cached, so
a failure is retried on the next run.
"""

from __future__ import annotations

import hashlib
import json
import threading
from datetime import UTC, datetime
from pathlib import Path

from toolkg.result_cache import open_cache_db

_SCHEMA = """
CREATE TABLE IF NOT EXISTS extraction (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    prompt_id TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    ontology_version TEXT NOT NULL,
    input_hash TEXT NOT NULL,
    run_id TEXT NOT NULL,
    created TEXT NOT NULL,
    value TEXT NOT NULL
)
"""


def cache_key(model: str, prompt_hash: str, ontology_version: str, input_hash: str) -> str:
    return hashlib.sha256("\x1f".join((model, prompt_hash, ontology_version, input_hash)).encode()).hexdigest()


class ExtractionCache:
    """One SQLite file shared by the extractor's worker threads (writes serialised by a lock)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = open_cache_db(self.path, _SCHEMA)

    def get(self, key: str) -> tuple[dict, str] | None:
        """(value, run id that produced it), or None."""
        with self._lock:
            row = self._db.execute("SELECT value, run_id FROM extraction WHERE key = ?", (key,)).fetchone()
        return (json.loads(row[0]), row[1]) if row else None

    def put(
        self,
        key: str,
        value: dict,
        *,
        model: str,
        prompt_id: str,
        prompt_hash: str,
        ontology_version: str,
        input_hash: str,
        run_id: str,
    ) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO extraction VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    model,
                    prompt_id,
                    prompt_hash,
                    ontology_version,
                    input_hash,
                    run_id,
                    datetime.now(UTC).isoformat(),
                    json.dumps(value, ensure_ascii=False, sort_keys=True),
                ),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM extraction").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
