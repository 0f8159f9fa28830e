"""Semantic extraction in the pipeline: choose the extractor, run it, turn its output into RDF.

Both extractors (offline rules, LLM) produce ``ToolExtraction``s. Each becomes the tool's
own named graph (``iris.extraction_graph``) that describes itself with PROV-O: extractor
and version, model, prompt id and hash, input hash, source manifest and run. Every triple
in that graph therefore knows where it came from; replacing or retracting a manifest
replaces or retracts its tools' extraction graphs with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from pyoxigraph import Literal, NamedNode, Triple

from toolkg.extractors.triples.models import ExtractionFailure, ToolExtraction, input_hash, tool_document
from toolkg.extractors.triples.offline import OfflineExtractor
from toolkg.extractors.triples.structural import entity_node
from toolkg.failures import quarantine
from toolkg.fingerprint import source_fingerprint
from toolkg.models import ExtractedManifest, QuarantinedItem, Server, ServerGraph, Tool
from toolkg.ontology import PROV, RDF, TK, iris, ontology_version
from toolkg.paths import store_cache
from toolkg.result_cache import ResultCache, result_key
from toolkg.usage import ExtractionUsage

EXTRACTORS: tuple[str, ...] = ("offline", "llm")


class SemanticExtractor(Protocol):
    name: str
    version: str

    def key(self) -> str: ...

    def extract_many(
        self, items: Sequence[tuple[Tool, Server]], run_id: str
    ) -> list[ToolExtraction | ExtractionFailure]:
        """One result per item, in the items' order."""
        ...

    def usage(self) -> ExtractionUsage:
        """What the extraction cost, for the run summary."""
        ...

    def close(self) -> None: ...


# The code the offline rules' results depend on: a change to any of it is a cache miss.
OFFLINE_CODE = (
    "toolkg.extractors.triples.offline",
    "toolkg.extractors.triples.models",
    "toolkg.text",
    "toolkg.ontology",
)


class OfflineBatch(OfflineExtractor):
    """The offline extractor with the batch interface the flow uses; results cached on disk when
    given a ``cache_path`` (toolkg.result_cache)."""

    def __init__(self, cache_path: str | Path | None = None) -> None:
        self.tools = 0
        self.cache_hits = 0  # results read from the cache
        self._cache = ResultCache(cache_path) if cache_path is not None else None
        self._code = f"{source_fingerprint(OFFLINE_CODE)}/{ontology_version()}"

    def extract_many(
        self, items: Sequence[tuple[Tool, Server]], run_id: str
    ) -> list[ToolExtraction | ExtractionFailure]:
        """One result per item; a tool the rules fail on is a failure of its own, not of the batch
        (not retried: the rules are deterministic, a rerun would fail the same way)."""
        self.tools += len(items)
        keys = [result_key(self._code, input_hash(tool_document(t, s))) for t, s in items] if self._cache else []
        cached = self._cache.get_many(keys) if self._cache else {}
        out: list[ToolExtraction | ExtractionFailure] = []
        fresh: list[tuple[str, str]] = []
        for position, (tool, server) in enumerate(items):
            hit = cached.get(keys[position]) if cached else None
            if hit is not None:  # the same document on another server id is the same extraction
                out.append(ToolExtraction.model_validate_json(hit).model_copy(update={"tool_id": tool.id}))
                self.cache_hits += 1
                continue
            try:
                result = self.extract(tool, server)
            except Exception as exc:
                entry = quarantine(exc, source="", item=tool.id, stage="extract")
                out.append(ExtractionFailure(tool_id=tool.id, reason=entry.reason, retry=False))
                continue
            out.append(result)
            if self._cache is not None:
                fresh.append((keys[position], result.model_dump_json()))
        if fresh and self._cache is not None:
            self._cache.put_many(fresh)
        return out

    def usage(self) -> ExtractionUsage:
        return ExtractionUsage(extractor=self.name, version=self.version, tools=self.tools, cache_hits=self.cache_hits)

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None


def make_extractor(name: str, store_dir: str | Path | None, llm_config: str | None = None) -> SemanticExtractor:
    """The configured extractor, caching under ``<store_dir>/cache`` (the offline one caches nothing
    without a ``store_dir``); ``llm`` raises ``ConfigError`` when no endpoint is configured."""
    if name == "offline":
        return OfflineBatch(store_cache(store_dir, "offline") if store_dir is not None else None)
    if name == "llm":
        if store_dir is None:
            raise ValueError("the LLM extractor keeps its cache in a store directory")
        from toolkg.extractors.triples.llm import LLMExtractor  # openai + instructor load only when used
        from toolkg.llm.config import load_llm_config

        config = load_llm_config(llm_config).require_endpoint()
        return LLMExtractor(config, store_cache(store_dir, "llm"))
    raise ValueError(f"unknown extractor {name!r} (choose from {', '.join(EXTRACTORS)})")


def extraction_triples(extraction: ToolExtraction, tool: Tool, manifest_path: str, run: NamedNode) -> list[Triple]:
    """The tool's extraction graph: its triples plus the graph's own provenance."""
    graph = iris.extraction_graph(tool.server_id, tool.name)
    tool_node = iris.tool_iri(tool.server_id, tool.name)
    # A triple names a parameter as the model echoed it: matched up to case and runs of whitespace.
    parameters = {_key(p.name): iris.parameter_iri(tool_node, p.name, p.location) for p in tool.parameters}
    out: list[Triple] = []

    def node(name: str, kind: str) -> NamedNode:
        if kind == "Tool":
            return tool_node
        if kind == "Parameter":
            return parameters[_key(name)]
        return entity_node(kind, name, out)

    for t in extraction.triples:
        out.append(Triple(node(t.head, t.head_type), getattr(TK, t.relation), node(t.tail, t.tail_type)))
    if extraction.action:
        out.append(Triple(tool_node, TK.action, Literal(extraction.action)))
    p = extraction.provenance
    out += [
        Triple(graph, RDF.type, TK.Extraction),
        Triple(graph, TK.extractionOf, tool_node),
        Triple(graph, TK.extractor, Literal(p.extractor)),
        Triple(graph, TK.extractorVersion, Literal(p.extractor_version)),
        Triple(graph, TK.inputHash, Literal(p.input_hash)),
        Triple(graph, PROV.wasDerivedFrom, iris.manifest_iri(manifest_path)),
        Triple(graph, PROV.wasGeneratedBy, iris.run_iri(p.run_id) if p.run_id else run),
    ]
    for prop, value in ((TK.model, p.model), (TK.promptId, p.prompt_id), (TK.promptHash, p.prompt_hash)):
        if value:
            out.append(Triple(graph, prop, Literal(value)))
    out += [Triple(graph, TK.note, Literal(note)) for note in extraction.notes]
    return list(dict.fromkeys(out))  # an entity named twice is typed and labelled once


def _key(name: str) -> str:
    return " ".join(name.split()).casefold()


def with_extractions(
    extracted: ExtractedManifest, results: Sequence[ToolExtraction | ExtractionFailure | None], run: NamedNode
) -> ExtractedManifest:
    """Add each tool's extraction graph; a failed extraction is quarantined and marked pending
    (the tool still loads with its structural triples, and the next run retries it). A result of
    ``None`` is a tool not extracted this time (incremental sync extracts the changed tools only)."""
    manifest = extracted.manifest
    graphs = list(extracted.graphs)
    quarantined = list(extracted.quarantined)
    pending = []
    tools = [(server, tool) for server in manifest.servers for tool in server.tools]
    structured = {tool_id for g in extracted.graphs for tool_id in g.tool_ids}  # a tool structure failed on is out
    for (server, tool), result in zip(tools, results, strict=True):
        if tool.id not in structured or result is None:
            continue
        if isinstance(result, ExtractionFailure):
            if result.retry:
                pending.append(tool.id)
            quarantined.append(
                QuarantinedItem(
                    source=manifest.path, item=tool.id, stage="extract", reason=result.reason, raw=result.raw
                )
            )
            continue
        try:
            triples = tuple(extraction_triples(result, tool, manifest.path, run))
        except Exception as exc:
            quarantined.append(quarantine(exc, source=manifest.path, item=tool.id, stage="extract"))
            continue
        graphs.append(
            ServerGraph(
                server_id=server.id,
                graph=iris.extraction_graph(server.id, tool.name),
                triples=triples,
                extraction_of=tool.id,
            )
        )
    return extracted.model_copy(
        update={"graphs": tuple(graphs), "quarantined": tuple(quarantined), "pending": tuple(pending)}
    )
