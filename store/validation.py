"""Validate stage: SHACL (pyshacl, no inference) against ontology/shapes.ttl.

Each manifest's triples are cut into chunks of whole tools (plus the server triples those
tools need) and validated in a small process pool, because pyshacl is CPU-bound pure Python.
Violations are mapped back to the tool (or server) whose node they concern: that item is
quarantined and its triples withheld, the rest of the manifest loads.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from functools import cache
from importlib.metadata import version
from multiprocessing import get_context
from pathlib import Path

from pydantic import BaseModel, ConfigDict
from pyoxigraph import NamedNode, Triple

from toolkg.models import ExtractedManifest, QuarantinedItem
from toolkg.ontology import SHAPES_FILE, iris
from toolkg.result_cache import ResultCache
from toolkg.store.shacl_worker import Row, shape_predicates, validate_rows

_TOOL_PREFIX = iris.BASE + "tool/"
CHUNK_ROWS = 8000  # rows per pyshacl call
POOL_MIN_CHUNKS = 4  # fewer chunks are validated in-process


class Violation(BaseModel):
    model_config = ConfigDict(frozen=True)

    focus: str
    path: str
    message: str


def tool_key(term) -> str | None:
    """'<server>/<tool>' of a tool IRI or of any node minted under it (parameters, outputs...)."""
    if isinstance(term, NamedNode) and term.value.startswith(_TOOL_PREFIX):
        parts = term.value[len(_TOOL_PREFIX) :].split("/", 2)
        if len(parts) >= 2:
            return parts[0] + "/" + parts[1]
    return None


def _row(t: Triple) -> Row:
    o = t.object
    if isinstance(o, NamedNode):
        return (t.subject.value, t.predicate.value, o.value, "iri", "")
    extra = "@" + o.language if getattr(o, "language", None) else o.datatype.value
    return (t.subject.value, t.predicate.value, o.value, "literal", extra)


def _chunks(triples: Sequence[Triple], size: int) -> list[list[Row]]:
    """Rows of about ``size`` triples each, holding whole tools plus the shared (server) triples."""
    wanted = shape_predicates(str(SHAPES_FILE))
    shared: list[Row] = []
    by_tool: dict[str, list[Row]] = defaultdict(list)
    for t in triples:
        if t.predicate.value not in wanted:
            continue
        key = tool_key(t.subject) or tool_key(t.object)
        (by_tool[key] if key else shared).append(_row(t))
    chunks: list[list[Row]] = []
    current: list[Row] = []
    for rows in by_tool.values():
        current.extend(rows)
        if len(current) >= size:
            chunks.append(shared + current)
            current = []
    if current or not chunks:
        chunks.append(shared + current)
    return chunks


class Validator:
    """Validates extracted manifests; owns the worker pool for the length of a build. With a
    ``cache_path``, verdicts are kept by the hash of the rows checked and of the shapes."""

    def __init__(self, workers: int | None = None, cache_path: str | Path | None = None) -> None:
        self.workers = workers if workers is not None else min(2, os.cpu_count() or 1)
        self._pool: Executor | None = None
        self._cache = ResultCache(cache_path) if cache_path is not None else None

    def __enter__(self) -> Validator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def violations(self, triples: Sequence[Triple]) -> list[Violation]:
        chunks = _chunks(triples, CHUNK_ROWS)
        if self._cache is None:
            return self._check(chunks)
        key = _verdict_key(chunks)
        hit = self._cache.get_many([key]).get(key)
        if hit is not None:
            return [Violation.model_validate(v) for v in json.loads(hit)]
        found = self._check(chunks)
        self._cache.put_many([(key, json.dumps([v.model_dump() for v in found]))])
        return found

    def _check(self, chunks: list[list[Row]]) -> list[Violation]:
        # Spawning workers costs about what validating 10k rows in-process does: only big inputs gain.
        if len(chunks) < POOL_MIN_CHUNKS or self.workers <= 1:
            found = [v for rows in chunks for v in validate_rows(rows, str(SHAPES_FILE))]
        else:
            if self._pool is None:
                # spawn, not fork: the flow process runs threads (Prefect), which fork would copy mid-flight.
                self._pool = ProcessPoolExecutor(self.workers, mp_context=get_context("spawn"))
            results = self._pool.map(validate_rows, chunks, [str(SHAPES_FILE)] * len(chunks))
            found = [v for chunk in results for v in chunk]
        return sorted({Violation(focus=f, path=p, message=m) for f, p, m in found}, key=lambda v: (v.focus, v.path))

    def validate(
        self, extracted: ExtractedManifest, only_tools: set[str] | None = None
    ) -> tuple[ExtractedManifest, list[QuarantinedItem]]:
        """Withhold the triples of every tool or server that violates a shape; report each one.

        ``only_tools`` (tool ids) checks just those tools and the server's own triples: incremental
        sync re-validates what changed, not a server's unchanged tools."""
        # Extraction graphs are not re-checked here: their triples passed the ontology-generated
        # response model (domain, range, closed types) when they were extracted.
        triples = [t for g in extracted.graphs if not g.extraction_of for t in g.triples]
        if only_tools is not None:
            keys = {tool_key(iris.tool_iri_from_id(t)) for t in only_tools}
            triples = [t for t in triples if (tool_key(t.subject) or tool_key(t.object)) in keys | {None}]
        violations = self.violations(triples)
        if not violations:
            return extracted, []
        return _withhold(extracted, violations)


@cache
def _shapes_digest() -> str:
    """The shapes and the engine that reads them."""
    return hashlib.sha256(SHAPES_FILE.read_bytes() + version("pyshacl").encode()).hexdigest()


def _verdict_key(chunks: list[list[Row]]) -> str:
    """The rows (in order: the same input gives the same order) and the shapes they are checked against."""
    digest = hashlib.sha256(_shapes_digest().encode())
    for rows in chunks:
        digest.update(b"\x1e")
        for row in rows:
            digest.update("\x1f".join(row).encode() + b"\n")
    return digest.hexdigest()


def _withhold(
    extracted: ExtractedManifest, violations: Iterable[Violation]
) -> tuple[ExtractedManifest, list[QuarantinedItem]]:
    """Map each violation to the tool (by IRI prefix) or server it concerns and drop those items."""
    tool_by_key = {tool_key(iris.tool_iri_from_id(t)): t for g in extracted.graphs for t in g.tool_ids}
    server_nodes = {iris.server_iri(g.server_id).value: g.server_id for g in extracted.graphs}
    reasons: dict[str, set[str]] = defaultdict(set)
    for v in violations:
        key = tool_key(NamedNode(v.focus)) if v.focus.startswith(_TOOL_PREFIX) else None
        owner = server_nodes.get(v.focus) or tool_by_key.get(key) or "?"
        reasons[owner].add(f"{v.message} ({v.path.rsplit('#', 1)[-1] or 'node'})")
    quarantined = [
        QuarantinedItem(
            source=extracted.manifest.path, item=owner, stage="validate", reason="SHACL: " + "; ".join(sorted(msgs))
        )
        for owner, msgs in sorted(reasons.items())
    ]
    bad_keys = {key for key, tool_id in tool_by_key.items() if tool_id in reasons}
    graphs = []
    for g in extracted.graphs:
        if g.server_id in reasons or "?" in reasons or g.extraction_of in reasons:
            continue  # a server-level (or unattributable) violation withholds the whole server graph
        kept = tuple(t for t in g.triples if (tool_key(t.subject) or tool_key(t.object)) not in bad_keys)
        ids = tuple(t for t in g.tool_ids if t not in reasons)
        graphs.append(g.model_copy(update={"triples": kept, "tool_ids": ids}))
    return extracted.model_copy(update={"graphs": tuple(graphs)}), quarantined
