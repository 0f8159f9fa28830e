"""Incremental sync on a live store: add, update or remove one server or one tool.

A full build re-reads every manifest and re-infers over the whole catalog. ``CatalogSync`` keeps
what the catalog-wide stages need warm (every tool, and each stage's own state: the inferred edges,
the structural links and the tool vectors) and applies one change with the build's own steps,
narrowed to what the change implies, and the build's options (the run's ``BuildConfig``):

- the server's manifest goes through the build's transform step (flows/steps.py), extracting the
  tools whose text changed and validating the tools whose triples differ; the server's named graph
  is patched by the triple difference, not rewritten, and a removed tool's extraction graph dropped;
- every stage of ``CATALOG_STAGES`` the run wants follows the change through the stages' one contract
  (flows/stages/base.py: ``warm`` once, ``update`` per change, ``after_write``): inference and links bring
  their graphs up to date for the changed tools' neighbourhood (``Infer.update``, ``Link.update``),
  proven equal to a rebuild by tests/integration/test_sync.py; canonicalize and the retrieval index,
  which only a pass over the whole catalog makes, are marked pending for the next build; the audit
  reads the changed tools as written (``Audit.after_write``: their findings, a rug pull's ``changed`` included).

Everything one operation writes but the audit goes in one SPARQL update, so one transaction: a failure
leaves the store as it was. The manifest that owns a synced server is marked stale (its fingerprint
cleared), so the next ``toolkg build`` re-reads it rather than trusting a record that no longer
matches the store.

The inference stage's state is the whole catalog's inference, indexed (canonicalize/inference/incremental.py):
opening a session infers over the store once; each change then costs what it reaches. The benchmark
(benchmarks/sync_bench.py) reports how many edges differ from a rebuild (none).
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from pyoxigraph import Literal, NamedNode, Triple

from toolkg.config import BuildConfig
from toolkg.errors import ConfigError, NotFoundError, ToolkgError
from toolkg.extractors.triples.semantic import make_extractor
from toolkg.extractors.triples.structural import NameIndex
from toolkg.flows.stages import CATALOG_STAGES, CatalogRun, CatalogStage
from toolkg.flows.stages.base import Change, StageState
from toolkg.flows.stages.infer import InferState
from toolkg.flows.steps import EXTRACT
from toolkg.flows.sync.result import SyncResult
from toolkg.models import ExtractedManifest, Manifest, Server, Tool
from toolkg.ontology import TK, iris
from toolkg.stages import StageContext
from toolkg.store.catalog_reads import manifests_defining
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.tool_changes import diff_tools
from toolkg.store.validation import Validator, tool_key
from toolkg.summary import BuildSummary
from toolkg.text.words import lemma


def _signature(tool: Tool) -> tuple:
    """What inference and links read of a tool (the fields a stored tool is read back with)."""
    return (
        tool.name,
        tool.description,
        tuple((p.name, p.required, p.location, p.description) for p in tool.parameters),
        tuple(o.name for o in tool.outputs),
        tool.route,
    )


class CatalogSync:
    """A warm view of one store for incremental changes. Use one writer per store."""

    def __init__(self, store: ToolStore, config: BuildConfig | None = None, *, warm: bool = True) -> None:
        """``config`` is the run's, as a build is told it (its stage switches and options); ``warm`` pays the
        one-time loads (model, lemma table, SHACL shapes) now, as a long-lived session wants; a one-shot CLI
        sync leaves them to the first operation that needs them."""
        started = time.perf_counter()
        config = config or BuildConfig()
        _refuse_what_sync_cannot_do(config)
        self.store = store
        run = CatalogRun(store, StageContext(_session_summary(store)), config)
        self.tools: dict[str, Tool] = {t.id: t for t in run.tools()}
        self.servers: dict[str, set[str]] = defaultdict(set)  # server id -> its tools' ids
        for i, t in self.tools.items():
            self.servers[t.server_id].add(i)
        # a stage the run switches off is left alone (the next build drops its graph, as builds do)
        self.stages: list[tuple[CatalogStage, StageState]] = [
            (stage, stage.warm(run)) for stage in CATALOG_STAGES if stage.wanted(run)
        ]
        self.index = NameIndex()
        self.index.add(self.tools, "sync")
        self.extractor = make_extractor("offline", store.directory)
        self.validator = Validator(workers=0)
        if warm:  # the embedding model, the lemma table and the compiled SHACL shapes load on first use
            for _, state in self.stages:
                state.preload()
            lemma("tools")
            self.validator.violations([])
        self.load_seconds = time.perf_counter() - started

    @property
    def edges(self) -> dict:
        """The inferred edges as they stand, by (consumer, producer, parameter) (none when inference is off)."""
        return next((s.edges for _, s in self.stages if isinstance(s, InferState)), {})

    def close(self) -> None:
        self.validator.close()
        self.extractor.close()
        for _, state in self.stages:
            state.close()

    def __enter__(self) -> CatalogSync:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- operations ------------------------------------------------------------------------

    def upsert_server(self, server: Server, source: str = "sync", format: str = "mcp") -> SyncResult:
        """Add a server or replace it with this version (``source`` and ``format`` as a manifest gives them)."""
        operation = "update-server" if self.servers.get(server.id) else "add-server"
        return self._apply(operation, server.id, server, source, format)

    def update_tool(self, server: Server, tool: Tool, source: str = "sync", format: str = "mcp") -> SyncResult:
        """Replace (or add) one tool of ``server``, the rest of which is as stored."""
        operation = "update-tool" if tool.id in self.tools else "add-tool"
        tools = tuple(t for t in server.tools if t.name != tool.name) + (tool,)
        return self._apply(operation, tool.id, server.model_copy(update={"tools": tools}), source, format)

    def remove_tool(self, server: Server, name: str, source: str = "sync", format: str = "mcp") -> SyncResult:
        """Remove the tool ``name`` of ``server``, the rest of which is as stored."""
        tool_id = f"{server.id}::{name}"
        if tool_id not in self.tools:
            raise NotFoundError(f"no tool {tool_id!r} in the store")
        tools = tuple(t for t in server.tools if t.name != name)
        return self._apply("remove-tool", tool_id, server.model_copy(update={"tools": tools}), source, format)

    def remove_server(self, server_id: str) -> SyncResult:
        if not self.servers.get(server_id):
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
        assert server_id is not None, "a sync names the server it changes (its new version, or its id)"
        graph = iris.server_graph(server_id)
        old = {i: self.tools[i] for i in self.servers.get(server_id, ())}
        new = {t.id: t for t in server.tools} if server else {}
        changed = {i for i in new if i not in old or _signature(old[i]) != _signature(new[i])}
        removed = set(old) - set(new)
        result.tools_changed = sorted(changed | removed)
        change = Change(changed, removed, before=list(self.tools.values()), tools=self.tools)
        drops = [iris.extraction_graph(server_id, old[i].name) for i in removed]
        if server is None:
            drops.append(graph)
            result.tools = diff_tools(self.store.graph_triples(graph), ())
        else:
            self.index.add(new, source)
            change.catalogs[server.id] = str(Path(source).parent)
            drops += self._transform(server, source, format, graph, changed, change, result)

        clock = self._lap(result, "graphs", started)
        for i in removed:
            del self.tools[i]
            self.index.discard(i)
        self.tools.update({i: new[i] for i in changed})
        self.servers[server_id] = set(new)
        for stage, state in self.stages:  # in the build's order; each patches ``change``
            result.fold(stage.update(state, change))
            clock = self._lap(result, stage.name.value, clock)
        deletions, insertions = change.deletions, change.insertions
        self._mark_owner_stale(server_id, deletions, insertions, graph, server is None)

        result.triples_deleted = sum(len(t) for t in deletions.values())
        result.triples_inserted = sum(len(t) for t in insertions.values())
        self.store.patch(deletions, insertions, drops)
        clock = self._lap(result, "write", clock)
        # what reads the store as written (the audit, as a build's audit reads the store) comes after, in a
        # second transaction: a sync killed before it leaves the changed tools unaudited until the next build
        for stage, state in self.stages:
            result.fold(stage.after_write(state, change))
            clock = self._lap(result, stage.name.value, clock)
        result.seconds = round(time.perf_counter() - started, 4)
        return result

    def _transform(
        self,
        server: Server,
        source: str,
        format: str,
        graph: NamedNode,
        changed: set[str],
        change: Change,
        result: SyncResult,
    ) -> list[NamedNode]:
        """The build's transform step over this server alone: the changed tools extracted, the tools
        whose triples differ from the stored ones validated. Patches the server's graph into
        ``change``; returns the extraction graphs it replaces."""
        manifest = Manifest(path=source, sha256="", format=format, servers=(server,))
        current = set(self.store.graph_triples(graph))

        def differing(extracted: ExtractedManifest) -> set[str]:
            # SHACL checks the tools whose triples differ (and the server's own), not the unchanged rest.
            keys = {tool_key(t.subject) or tool_key(t.object) for t in current ^ _structural(extracted)}
            return {t.id for t in server.tools if tool_key(iris.tool_iri_from_id(t.id)) in keys}

        info = EXTRACT.run(
            [manifest],
            self.index,
            self.validator,
            self.extractor,
            self.run_id(),
            extract_only=changed,
            validate_only=differing,
        )
        (extracted,) = info.extracted
        if extracted is None:  # the server could not be made into triples at all: nothing is written
            raise ToolkgError(info.quarantined[0].reason)
        result.quarantined += info.quarantined
        wanted = _structural(extracted)
        result.tools = diff_tools(current, wanted)
        change.patch(graph, current - wanted, wanted - current)
        replaced = []
        for g in extracted.graphs:
            if g.extraction_of:
                replaced.append(g.graph)
                change.patch(g.graph, set(), set(g.triples))
        return replaced

    @staticmethod
    def run_id() -> str:
        return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-sync-") + uuid.uuid4().hex[:6]

    @staticmethod
    def _lap(result: SyncResult, stage: str, since: float) -> float:
        """Seconds since ``since`` added to ``stage``'s (a stage is timed before the write and after it)."""
        now = time.perf_counter()
        result.stage_seconds[stage] = round(result.stage_seconds.get(stage, 0.0) + now - since, 4)
        return now

    def _mark_owner_stale(self, server_id: str, deletions, insertions, graph: NamedNode, gone: bool) -> None:
        """The manifest that defined this server no longer matches the store: clear its fingerprint
        (the next build re-reads it); a removed server's graph leaves its record."""
        for record, fingerprint in manifests_defining(self.store, graph):
            deletions.setdefault(iris.MANIFESTS_GRAPH, set()).add(Triple(record, TK.fingerprint, fingerprint))
            insertions.setdefault(iris.MANIFESTS_GRAPH, set()).add(Triple(record, TK.fingerprint, Literal("")))
            if gone:
                deletions[iris.MANIFESTS_GRAPH].add(Triple(record, TK.definesGraph, graph))


def _structural(extracted: ExtractedManifest) -> set[Triple]:
    """A manifest's triples for its servers' own graphs (not its tools' extraction graphs)."""
    return {t for g in extracted.graphs if not g.extraction_of for t in g.triples}


def _session_summary(store: ToolStore) -> BuildSummary:
    """The context's summary a sync session's stages share (each operation reports in its ``SyncResult``)."""
    started = datetime.now(UTC)
    run_id = started.strftime("%Y%m%dT%H%M%SZ-sync-") + uuid.uuid4().hex[:6]
    return BuildSummary(run_id=run_id, store=str(store.directory), started=started.isoformat())


def _refuse_what_sync_cannot_do(config: BuildConfig) -> None:
    """Settings a sync cannot honour are refused, not ignored: it extracts with the offline rules, has no
    LLM review of inferred edges, and patches what the manifests declare."""
    cannot = {
        "build.extractor=llm": config.extractor == "llm",
        "build.confirm_deps": config.confirm_deps,
        "build.hide_declared": config.hide_declared,
    }
    if refused := [name for name, on in cannot.items() if on]:
        raise ConfigError(f"an incremental sync cannot honour {', '.join(refused)}: run a full build")
