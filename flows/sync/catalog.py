"""Incremental sync on a live store: add, update or remove one server, or update one tool.

A full build re-reads every manifest and re-infers over the whole catalog. ``CatalogSync`` keeps
what the catalog-wide stages need in memory (every tool, the inferred edges, the structural
links, the tool vectors) and applies one change by touching only:

- the server's named graph (the triple difference, not a rewrite) and the extraction graphs of the
  tools whose text changed (a removed tool's extraction graph is dropped);
- the dependency edges in the changed tools' neighbourhood: consumers of a changed tool's old
  edges, consumers any changed tool is now a candidate producer for, and the changed tools
  themselves are re-inferred against the whole catalog; no other consumer is looked at;
- the structural links whose value changed (recomputed from cached vectors, written as a diff).

Everything one operation writes goes in one SPARQL update, so one transaction: a failure leaves
the store as it was. The manifest that owns a synced server is marked stale (its fingerprint
cleared), so the next ``toolkg build`` re-reads it rather than trusting a record that no longer
matches the store.

Known difference from a full rebuild: the weak-rule fan-out cap (``InferenceOptions.weak_fanout_cap``)
is counted over the neighbourhood, not the catalog, so a producer near the cap can keep an edge
a rebuild would drop. The benchmark reports how many edges differ from a rebuild.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from pyoxigraph import Literal, NamedNode, Triple

from toolkg.canonicalize.inference.infer import infer_dependencies
from toolkg.canonicalize.links.incremental import IncrementalLinks
from toolkg.canonicalize.links.structural import LinkIndex, tool_text
from toolkg.config import InferenceOptions
from toolkg.embeddings.encoder import Embedder
from toolkg.errors import NotFoundError
from toolkg.extractors.triples.models import ExtractionFailure
from toolkg.extractors.triples.semantic import extraction_triples, make_extractor
from toolkg.extractors.triples.structural import NameIndex, extract_structure
from toolkg.models import InferredEdge, Manifest, QuarantinedItem, Server, Tool, ToolLink
from toolkg.ontology import TK, iris
from toolkg.store.catalog_reads import manifests_defining, server_catalogs, stored_tools
from toolkg.store.dependencies import (
    INFERRED_GRAPH,
    LINKS_GRAPH,
    declared_pairs,
    dependency_rows,
    edge_triples,
    link_rows,
    link_triples,
)
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.validation import Validator, tool_key
from toolkg.sync.result import SyncResult
from toolkg.text.words import lemma


def _signature(tool: Tool) -> tuple:
    """What inference and links read of a tool (the fields a stored tool is read back with)."""
    return (
        tool.name,
        tool.description,
        tuple((p.name, p.required, p.location, p.description) for p in tool.parameters),
        tuple(o.name for o in tool.outputs),
    )


def _edge_key(e: InferredEdge) -> tuple[str, str, str | None]:
    return (e.consumer, e.producer, e.parameter)


class CatalogSync:
    """A warm view of one store for incremental changes. Use one writer per store."""

    def __init__(
        self, store: ToolStore, *, links: bool = True, embedder: Embedder | None = None, warm: bool = True
    ) -> None:
        """``warm`` pays the one-time loads (model, lemma table, SHACL shapes) now, as a long-lived
        session wants; a one-shot CLI sync leaves them to the first operation that needs them."""
        started = time.perf_counter()
        self.store = store
        self.tools: dict[str, Tool] = {t.id: t for t in stored_tools(store)}
        self.declared = declared_pairs(store)
        self.catalogs = server_catalogs(store)  # inference keeps unrelated catalogs apart
        self.edges: dict[tuple, InferredEdge] = {
            (r["consumer"], r["producer"], r["parameter"]): InferredEdge(
                consumer=r["consumer"],
                producer=r["producer"],
                kind=r["kind"],
                parameter=r["parameter"],
                confidence=r["confidence"] or 0.0,
                rule=r["rule"] or "",
                evidence=r["evidence"],
                basis=r["basis"],
            )
            for r in dependency_rows(store)
            if r["basis"] != "declared"
        }
        self.links_on = links
        self.links: dict[tuple, ToolLink] = {}
        self.vectors: dict[str, np.ndarray] = {}
        self.embedder = embedder
        if links:
            self.links = {
                (r["source"], r["target"], r["kind"]): ToolLink(
                    r["source"], r["target"], r["kind"], round(r["score"], 3), r["evidence"]
                )
                for r in link_rows(store)
            }
            self.embedder = embedder or Embedder(store.directory / "cache" / "embeddings.sqlite")
            ids = sorted(self.tools)
            matrix = self.embedder.encode([tool_text(self.tools[i]) for i in ids], label="embed tools")
            self.vectors = dict(zip(ids, matrix, strict=True))
            self.link_index = LinkIndex(list(self.tools.values()), self.vectors)
            self.link_state = IncrementalLinks(self.link_index)  # every tool's top lists: computed once
            self._links_checked = False  # the first operation also writes any stored link that differs
            if warm:  # the ONNX session now: an operation's few texts never wait for it, nor take the NumPy pass
                self.embedder.warm()
        self.index = NameIndex()
        self.index.add(self.tools, "sync")
        self.extractor = make_extractor("offline", store.directory)
        self.validator = Validator(workers=0)
        if warm:  # the lemma table, the SHACL shapes and pyshacl load on first use
            lemma("tools")
            self.validator.violations([])
        self.load_seconds = time.perf_counter() - started

    def close(self) -> None:
        self.validator.close()
        self.extractor.close()
        if self.embedder is not None:
            self.embedder.close()

    def __enter__(self) -> CatalogSync:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- operations ------------------------------------------------------------------------

    def upsert_server(self, server: Server, source: str = "sync", format: str = "mcp") -> SyncResult:
        """Add a server or replace it with this version (``source`` and ``format`` as a manifest gives them)."""
        operation = "update-server" if any(t.server_id == server.id for t in self.tools.values()) else "add-server"
        return self._apply(operation, server.id, server, source, format)

    def update_tool(self, server: Server, tool: Tool, source: str = "sync", format: str = "mcp") -> SyncResult:
        """Replace (or add) one tool of ``server``, the rest of which is as stored."""
        tools = tuple(t for t in server.tools if t.name != tool.name) + (tool,)
        return self._apply("update-tool", tool.id, server.model_copy(update={"tools": tools}), source, format)

    def remove_server(self, server_id: str) -> SyncResult:
        if not any(t.server_id == server_id for t in self.tools.values()):
            raise NotFoundError(f"no server {server_id!r} in the store")
        return self._apply("remove-server", server_id, None, "sync", "", server_id=server_id)

    # --- the one mechanism -----------------------------------------------------------------

    def _apply(
        self,
        operation: str,
        target: str,
        server: Server | None,
        source: str,
        format: str,
        server_id: str | None = None,
    ) -> SyncResult:
        started = time.perf_counter()
        result = SyncResult(operation, target)
        server_id = server.id if server else server_id
        graph = iris.server_graph(server_id)
        old = {i: t for i, t in self.tools.items() if t.server_id == server_id}
        new = {t.id: t for t in server.tools} if server else {}
        changed = {i for i in new if i not in old or _signature(old[i]) != _signature(new[i])}
        removed = set(old) - set(new)
        result.tools_changed = sorted(changed | removed)
        run = iris.run_iri(datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-sync-") + uuid.uuid4().hex[:6])

        deletions: dict[NamedNode, set[Triple]] = {}
        insertions: dict[NamedNode, set[Triple]] = {}
        drops = [iris.extraction_graph(server_id, old[i].name) for i in removed]
        if server is None:
            drops.append(graph)
        else:
            self.index.add(new, source)
            self.catalogs[server.id] = str(Path(source).parent)
            manifest = Manifest(path=source, sha256="", format=format, servers=(server,))
            extracted = extract_structure(manifest, self.index)
            current = set(self.store.graph_triples(graph))
            wanted = {t for g in extracted.graphs if not g.extraction_of for t in g.triples}
            # SHACL checks the tools whose triples differ (and the server's own), not the unchanged rest.
            differing = {tool_key(t.subject) or tool_key(t.object) for t in current ^ wanted}
            touched = {i for i in new if tool_key(iris.tool_iri_from_id(i)) in differing}
            extracted, rejected = self.validator.validate(extracted, touched)
            result.quarantined += [*extracted.quarantined, *rejected]
            if rejected:
                wanted = {t for g in extracted.graphs if not g.extraction_of for t in g.triples}
            deletions[graph], insertions[graph] = current - wanted, wanted - current
            todo = [(t, server) for t in server.tools if t.id in changed]
            for (tool, _), extraction in zip(todo, self.extractor.extract_many(todo, run.value), strict=True):
                g = iris.extraction_graph(server_id, tool.name)
                if isinstance(extraction, ExtractionFailure):
                    result.quarantined.append(QuarantinedItem(source, tool.id, "extract", extraction.reason))
                    continue
                drops.append(g)
                insertions[g] = set(extraction_triples(extraction, tool, source, run))

        clock = self._lap(result, "graphs", started)
        before = list(self.tools.values())  # edge triples being retracted name parameters as they were
        for i in removed:
            del self.tools[i]
            self.vectors.pop(i, None)
            self.index.discard(i)
        self.tools.update({i: new[i] for i in changed})
        self._reinfer(changed, removed, before, deletions, insertions, result)
        clock = self._lap(result, "infer", clock)
        if self.links_on:
            self._relink(changed, removed, before, deletions, insertions, result)
        clock = self._lap(result, "link", clock)
        self._mark_owner_stale(server_id, deletions, insertions, graph, server is None)

        result.triples_deleted = sum(len(t) for t in deletions.values())
        result.triples_inserted = sum(len(t) for t in insertions.values())
        self.store.patch(deletions, insertions, drops)
        self._lap(result, "write", clock)
        result.seconds = round(time.perf_counter() - started, 4)
        return result

    @staticmethod
    def _lap(result: SyncResult, stage: str, since: float) -> float:
        now = time.perf_counter()
        result.stage_seconds[stage] = round(now - since, 4)
        return now

    def _reinfer(self, changed: set[str], removed: set[str], before, deletions, insertions, result) -> None:
        touched = changed | removed
        catalog = list(self.tools.values())
        neighbourhood = set(changed)
        neighbourhood |= {e.consumer for e in self.edges.values() if e.producer in touched}
        if changed:  # every consumer a changed tool could now feed, before sparsification
            candidates = infer_dependencies(catalog, producers=changed, sparsify=False, catalogs=self.catalogs)
            neighbourhood |= {e.consumer for e in candidates}
        if InferenceOptions().learned:  # a slot's learned producer is judged among its whole server's candidates
            servers = {i.partition("::")[0] for i in touched}
            neighbourhood |= {i for i, tool in self.tools.items() if tool.server_id in servers}
        neighbourhood -= removed
        result.neighbourhood = len(neighbourhood)
        fresh = (
            infer_dependencies(catalog, declared=self.declared, consumers=neighbourhood, catalogs=self.catalogs)
            if neighbourhood
            else []
        )
        stale = [e for e in self.edges.values() if e.consumer in neighbourhood | removed or e.producer in removed]
        # Edges sharing a (consumer, producer) pair share triples (tk:dependsOn ...); both sets hold
        # every edge of such a pair, so a set difference never retracts a triple still wanted.
        old_triples, new_triples = set(edge_triples(stale, before)), set(edge_triples(fresh, catalog))
        deletions.setdefault(INFERRED_GRAPH, set()).update(old_triples - new_triples)
        insertions.setdefault(INFERRED_GRAPH, set()).update(new_triples - old_triples)
        old, new = {_edge_key(e): e for e in stale}, {_edge_key(e): e for e in fresh}
        for key in old:
            self.edges.pop(key, None)
        self.edges.update(new)
        result.edges_added = sum(old.get(k) != e for k, e in new.items())
        result.edges_removed = sum(new.get(k) != e for k, e in old.items())

    def _relink(self, changed: set[str], removed: set[str], before, deletions, insertions, result) -> None:
        if changed:
            clock = time.perf_counter()
            ids = sorted(changed)
            encoded = self.embedder.encode([tool_text(self.tools[i]) for i in ids], label="embed tools")
            self.vectors.update(zip(ids, encoded, strict=True))
            result.stage_seconds["embed"] = round(time.perf_counter() - clock, 4)  # part of "link"
        for i in removed:
            self.link_index.discard(i)
        for i in changed:
            self.link_index.put(self.tools[i])
        touched = changed | removed
        redecided = self.link_state.update(touched, [t for t in before if t.id in touched])
        if not self._links_checked:  # a store linked by another version of the rules is brought in line once
            redecided |= self.links.keys() | self.link_state.links.keys()
            self._links_checked = True
        # A link's triples are its own (its node is named by source, type and target): diff by link.
        # Scores are rounded as stored (3 decimals) where links are made, so unchanged ones compare equal.
        now = self.link_state.links
        gone = [self.links[k] for k in redecided if k in self.links and now.get(k) != self.links[k]]
        added = [now[k] for k in redecided if k in now and self.links.get(k) != now[k]]
        for x in gone:
            del self.links[x.source, x.target, x.kind]
        self.links.update(((x.source, x.target, x.kind), x) for x in added)
        deletions.setdefault(LINKS_GRAPH, set()).update(link_triples(gone))
        insertions.setdefault(LINKS_GRAPH, set()).update(link_triples(added))
        result.links_added, result.links_removed = len(added), len(gone)

    def _mark_owner_stale(self, server_id: str, deletions, insertions, graph: NamedNode, gone: bool) -> None:
        """The manifest that defined this server no longer matches the store: clear its fingerprint
        (the next build re-reads it); a removed server's graph leaves its record."""
        for record, fingerprint in manifests_defining(self.store, graph):
            deletions.setdefault(iris.MANIFESTS_GRAPH, set()).add(Triple(record, TK.fingerprint, fingerprint))
            insertions.setdefault(iris.MANIFESTS_GRAPH, set()).add(Triple(record, TK.fingerprint, Literal("")))
            if gone:
                deletions[iris.MANIFESTS_GRAPH].add(Triple(record, TK.definesGraph, graph))
