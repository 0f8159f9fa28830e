"""Validate stage: SHACL (no inference) against ontology/shapes.ttl.

The shapes are compiled to SPARQL and run by Oxigraph in this process (``store/shacl_sparql.py``); pySHACL,
the reference engine, is kept for checking that engine (tests) and on request (``TOOLKG_SHACL_ENGINE=pyshacl``
or ``Validator(engine="pyshacl")``). Both read the same triples: a manifest's triples of the predicates the
shapes look at, cut into chunks of whole tools (plus the server triples those tools need) so that memory
follows the chunk, not the catalog. pySHACL, CPU-bound pure Python, runs big inputs in a small process pool.
Violations are mapped back to the tool (or server) whose node they concern: that item is quarantined and
its triples withheld, the rest of the manifest loads.
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
from pyoxigraph import Literal, NamedNode, RdfFormat, Triple, serialize

from toolkg.environment import SHACL_ENGINE
from toolkg.errors import ConfigError
from toolkg.models import ExtractedManifest, QuarantinedItem
from toolkg.ontology import SHAPES_FILE, iris
from toolkg.result_cache import ResultCache
from toolkg.store import shacl_sparql
from toolkg.store.shacl_worker import Row, validate_rows

_TOOL_PREFIX = iris.BASE + "tool/"
ENGINES = ("sparql", "pyshacl")
# Triples per chunk: an Oxigraph store of 100k triples takes about 35 MB; pySHACL's rdflib graph is
# slower to build, and its chunks are what the process pool hands out.
CHUNK_TRIPLES = {"sparql": 100_000, "pyshacl": 8000}
POOL_MIN_CHUNKS = 4  # fewer pySHACL chunks are validated in-process


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


def row_of(t: Triple) -> Row:
    """A triple as pySHACL's worker reads it (plain strings cross the process boundary)."""
    s, o = t.subject, t.object
    assert not isinstance(s, Triple), "toolkg writes no RDF-star quoted triples"
    if isinstance(o, NamedNode):
        return (s.value, t.predicate.value, o.value, "iri", "")
    assert isinstance(o, Literal), "no blank node is an object in the graphs validated"
    extra = "@" + o.language if o.language else o.datatype.value
    return (s.value, t.predicate.value, o.value, "literal", extra)


def _chunks(triples: Sequence[Triple], size: int) -> list[list[Triple]]:
    """Chunks of about ``size`` triples, each holding whole tools plus the shared (server) triples."""
    if len(triples) <= size:
        return [list(triples)]
    shared: list[Triple] = []
    by_tool: dict[str, list[Triple]] = defaultdict(list)
    for t in triples:
        key = tool_key(t.subject) or tool_key(t.object)
        (by_tool[key] if key else shared).append(t)
    chunks: list[list[Triple]] = []
    current: list[Triple] = []
    for grouped in by_tool.values():
        current.extend(grouped)
        if len(current) >= size:
            chunks.append(shared + current)
            current = []
    if current or not chunks:
        chunks.append(shared + current)
    return chunks


class Validator:
    """Validates extracted manifests. ``engine`` is "sparql" (the default, or ``TOOLKG_SHACL_ENGINE``) or
    "pyshacl"; ``workers`` sizes pySHACL's process pool (kept for the length of a build). With a
    ``cache_path``, verdicts are kept by the hash of the triples checked, the shapes and the engine."""

    def __init__(
        self, workers: int | None = None, cache_path: str | Path | None = None, engine: str | None = None
    ) -> None:
        self.engine = engine or SHACL_ENGINE.get()
        if self.engine not in ENGINES:
            raise ConfigError(
                f"SHACL engine {self.engine!r}: expected one of {', '.join(ENGINES)} ({SHACL_ENGINE.name})"
            )
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
        shapes = shacl_sparql.compiled_shapes(str(SHAPES_FILE))
        wanted = shapes.predicate_nodes  # other triples cannot change a result
        checked = [t for t in triples if t.predicate in wanted]
        if self._cache is None:
            return self._check(checked)
        key = _verdict_key(self.engine, checked)
        hit = self._cache.get_many([key]).get(key)
        if hit is not None:
            return [Violation.model_validate(v) for v in json.loads(hit)]
        found = self._check(checked)
        self._cache.put_many([(key, json.dumps([v.model_dump() for v in found]))])
        return found

    def _check(self, triples: list[Triple]) -> list[Violation]:
        chunks = _chunks(triples, CHUNK_TRIPLES[self.engine])
        if self.engine == "sparql":
            shapes = shacl_sparql.compiled_shapes(str(SHAPES_FILE))
            found = {v for chunk in chunks for v in shapes.violations(chunk)}
        elif len(chunks) < POOL_MIN_CHUNKS or self.workers <= 1:
            # Spawning workers costs about what validating 10k rows in-process does: only big inputs gain.
            found = {v for chunk in chunks for v in validate_rows([row_of(t) for t in chunk], str(SHAPES_FILE))}
        else:
            if self._pool is None:
                # spawn, not fork: the flow process runs threads (Prefect), which fork would copy mid-flight.
                self._pool = ProcessPoolExecutor(self.workers, mp_context=get_context("spawn"))
            rows = ([row_of(t) for t in chunk] for chunk in chunks)
            results = self._pool.map(validate_rows, rows, [str(SHAPES_FILE)] * len(chunks))
            found = {v for chunk in results for v in chunk}
        return sorted((Violation(focus=f, path=p, message=m) for f, p, m in found), key=lambda v: (v.focus, v.path))

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
def _engine_digest(engine: str) -> str:
    """The shapes and the engine that reads them: for the compiled engine its own code, Oxigraph and rdflib
    (whose reading of literals it follows); for the reference, pySHACL."""
    parts = [SHAPES_FILE.read_bytes(), engine.encode()]
    if engine == "sparql":
        parts += [Path(shacl_sparql.__file__).read_bytes(), version("pyoxigraph").encode(), version("rdflib").encode()]
    else:
        parts.append(version("pyshacl").encode())
    return hashlib.sha256(b"\x1e".join(parts)).hexdigest()


def _verdict_key(engine: str, triples: Sequence[Triple]) -> str:
    """The triples checked (in order: the same input gives the same order) and what checks them."""
    digest = hashlib.sha256(_engine_digest(engine).encode())
    data = serialize(triples, format=RdfFormat.N_TRIPLES)
    assert data is not None, "serialize() returns the bytes when given no output"
    digest.update(data)
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
