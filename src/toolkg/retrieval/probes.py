"""Probe queries a catalog makes of its own texts: how well each text signal finds a tool, without labels.

A catalog can test its own retrievers. For a sample of its tools (``SAMPLE``, seeded) it asks a question made
from the tool's own texts and sees where each signal ranks that tool:

- ``description``: the first sentence of its description with the words of its name and its server's name
  taken out (a request says what it wants done, rarely the tool's name);
- ``parameter``: one of its parameters' descriptions (what a request often says: the thing it has in hand);
- ``capability``: a paraphrase from the offline extractor's triples: the tool's capabilities and the
  business objects it is about ("monitor git commit"), words the tool's text may not use at all.

The probes are what ``toolkg.retrieval.choice`` weighs the signals by: a catalog of short texts with little
shared vocabulary shows BM25 weak on its own probes, one of long texts with rare words shows dense weak.
They favour BM25 (a probe shares words with its tool by construction); the map from probe figures to
weights is learned on labelled catalogs (``benchmarks/suite/train.py``), which is where that bias is
corrected. The probes' candidates are computed once per catalog and kept in the store's ``probes`` cache,
keyed by the catalog's texts, the model and this module's ``VERSION``. The build's index stage makes them, so
no query pays for them on a store built since; after a sync that changes the catalog its first query makes
them (a sync that made them cost more than the rest of its work: flows/stages/retrieval_index.py).
"""

from __future__ import annotations

import hashlib
import io
import random
import re
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import numpy as np

from toolkg.embeddings.encoder import first_sentence
from toolkg.paths import store_cache
from toolkg.retrieval.catalog import Catalog
from toolkg.retrieval.lexical import tokenize

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

SAMPLE = 300  # probes per catalog: the figures' standard error about 0.02 at MRR 0.5
SEED = 0
VERSION = 2  # of the probe maker and the cached candidates: a change here makes new probes
KINDS = ("description", "parameter", "capability")
MIN_WORDS = 3  # a probe of fewer words asks nothing in particular


@dataclass(frozen=True)
class Probe:
    text: str
    tool: int  # the tool's position in the catalog: the one right answer
    kind: str  # one of KINDS


def without_name(text: str, names: Sequence[str]) -> str:
    """``text`` without the words its tool's names are made of (compared as BM25 tokens: "users" is "user").

    >>> without_name("Lists the users of a GitHub repository", ["list_users", "github"])
    'the of a repository'
    """
    taken = {token for name in names for token in tokenize(name)}
    whole = {word.lower() for name in names for word in _WORD.findall(name)}  # "GitHub" against "github"

    def named(word: str) -> bool:
        return bool(set(tokenize(word)) & taken) or any(w.lower() in whole for w in _WORD.findall(word))

    return " ".join(word for word in text.split() if not named(word))


def read_paraphrases(store) -> dict[str, str]:
    """Tool IRI -> its capabilities then the business objects it is about, as the offline extractor found
    them (``tk:hasCapability``, ``tk:hasEntity``), each once. The words are read off the entities' IRIs,
    which are slugs of their labels (``.../capability/monitor``, ``.../business-object/repo-path``): joining
    the labels costs 100 times more on a large catalog (each label is stated in every graph that uses it)."""
    words: dict[str, dict[str, None]] = {}
    for predicate in ("tk:hasCapability", "tk:hasEntity"):
        for row in store.select(f"SELECT ?t ?e WHERE {{ ?t {predicate} ?e }}"):
            slug = unquote(row["e"].value.rstrip("/").rsplit("/", 1)[-1]).replace("-", " ").strip()
            if slug:
                words.setdefault(row["t"].value, {})[slug] = None
    return {tool: " ".join(labels) for tool, labels in words.items()}


def make_probes(
    catalog: Catalog, paraphrases: dict[str, str] | None = None, size: int = SAMPLE, seed: int = SEED
) -> list[Probe]:
    """Up to ``size`` probes, the three kinds in turn, tools drawn at random (``seed``) within each kind."""
    rng = random.Random(seed)
    pools: dict[str, list[Probe]] = {kind: [] for kind in KINDS}
    paraphrases = paraphrases or {}
    for position, tool in enumerate(catalog.tools):
        names = (tool.name, tool.server)
        description = without_name(first_sentence(tool.description), names)
        if len(description.split()) >= MIN_WORDS:
            pools["description"].append(Probe(description, position, "description"))
        described = [d for d in tool.parameter_descriptions if len(d.split()) >= MIN_WORDS]
        if described:
            text = without_name(first_sentence(rng.choice(described)), names)
            if len(text.split()) >= MIN_WORDS:
                pools["parameter"].append(Probe(text, position, "parameter"))
        paraphrase = paraphrases.get(tool.iri, "")
        if len(paraphrase.split()) >= 2:  # a capability and one object: "send email"
            pools["capability"].append(Probe(paraphrase, position, "capability"))
    for pool in pools.values():
        rng.shuffle(pool)
    out: list[Probe] = []
    for n in range(max((len(p) for p in pools.values()), default=0)):
        for kind in KINDS:
            if n < len(pools[kind]) and len(out) < size:
                out.append(pools[kind][n])
    return out


def catalog_digest(catalog: Catalog, model: str) -> str:
    """What the probes depend on: every tool's id and searched text, and the embedding model."""
    digest = hashlib.sha256(f"probes {VERSION} {SAMPLE} {SEED} {model}".encode())
    for tool in catalog.tools:
        digest.update(f"\x1e{tool.id}\x1f{tool.text}".encode())
    return digest.hexdigest()


def probe_candidates(index, probes: list[Probe]) -> list[tuple]:
    """Each probe's candidates (``fusion.Candidates``) and its tool; the probes' vectors go through the
    store's vector cache."""
    from toolkg.retrieval.fusion import candidates_of

    if not probes:
        return []
    vectors = index.encode_texts([p.text for p in probes])
    return [(candidates_of(index, p.text, vector), p.tool) for p, vector in zip(probes, vectors, strict=True)]


ARRAYS = ("positions", "cosine", "dense_rank", "bm25", "bm25_rank")  # fusion.Candidates' arrays
SCALARS = ("best_cosine", "best_bm25", "words")


def pack(made: list[tuple]) -> bytes:
    """Probe candidates as one NumPy archive (no pickle: a store folder may come from anyone)."""
    sizes = [len(found.positions) for found, _ in made]
    arrays: dict[str, Any] = {name: np.concatenate([getattr(found, name) for found, _ in made]) for name in ARRAYS}
    scalars: dict[str, Any] = {
        name: np.array([getattr(found, name) for found, _ in made], dtype=np.float64) for name in SCALARS
    }
    payload: dict[str, Any] = {"sizes": np.array(sizes, dtype=np.int64), "tools": np.array([t for _, t in made])}
    out = io.BytesIO()
    np.savez(out, **payload, **arrays, **scalars)
    return out.getvalue()


def unpack(data: bytes) -> list[tuple]:
    from toolkg.retrieval.fusion import Candidates

    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        sizes, tools = archive["sizes"], archive["tools"]
        arrays = {name: np.split(archive[name], np.cumsum(sizes)[:-1]) for name in ARRAYS}
        scalars = {name: archive[name] for name in SCALARS}
    made = []
    for n, tool in enumerate(tools.tolist()):
        found = Candidates(
            **{name: arrays[name][n] for name in ARRAYS},
            best_cosine=float(scalars["best_cosine"][n]),
            best_bm25=float(scalars["best_bm25"][n]),
            words=int(scalars["words"][n]),
        )
        made.append((found, int(tool)))
    return made


class ProbeCache:
    """The store's ``probes`` cache: the probe candidates of the catalog's digest. A store that cannot be
    written (a read-only copy) keeps nothing: the probes are made again in each process."""

    def __init__(self, store_dir: str | Path) -> None:
        self.path = store_cache(store_dir, "probes")

    def get(self, key: str) -> list[tuple] | None:
        if not self.path.exists():
            return None
        try:
            with sqlite3.connect(f"file:{self.path}?mode=ro", uri=True) as db:
                row = db.execute("SELECT value FROM probes WHERE key = ?", (key,)).fetchone()
            return unpack(row[0]) if row else None
        except Exception:  # noqa: BLE001 - any archive that does not read back (a store may come from anyone): made again
            return None

    def put(self, key: str, value: list[tuple]) -> None:
        if not value:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with sqlite3.connect(self.path) as db:
                db.execute("CREATE TABLE IF NOT EXISTS probes (key TEXT PRIMARY KEY, value BLOB)")
                db.execute("DELETE FROM probes")  # one catalog per store: older digests are stale
                db.execute("INSERT INTO probes VALUES (?, ?)", (key, pack(value)))
        except (OSError, sqlite3.Error):
            pass  # read-only: nothing kept, the probes are made again next time


@dataclass(frozen=True)
class CatalogProbes:
    """A catalog's probe candidates, and whether this call made them (False: read from the store's cache)."""

    made: list[tuple]
    fresh: bool
    seconds: float


def probes_of(index, store_dir: str | Path | None) -> CatalogProbes:
    """The catalog's probe candidates, from the store's cache when its digest matches, else made and kept.
    The build's index stage makes them (``flows/stages/retrieval_index.py``), so a query finds them made;
    after a sync that changed the catalog, or on a store built before that stage made them, the first query
    makes them."""
    started = time.perf_counter()
    key = catalog_digest(index.catalog, index.embedding_model)
    cache = ProbeCache(store_dir) if store_dir is not None else None
    found = cache.get(key) if cache else None
    if found is not None:
        return CatalogProbes(found, False, time.perf_counter() - started)
    probes = make_probes(index.catalog, read_paraphrases(index.store))
    made = probe_candidates(index, probes)
    if cache:
        cache.put(key, made)
    return CatalogProbes(made, True, time.perf_counter() - started)


def catalog_probes(index, store_dir: str | Path | None) -> list[tuple]:
    """``probes_of``'s candidates alone."""
    return probes_of(index, store_dir).made
