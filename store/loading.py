"""Load stage: decide what changed, swap graphs in atomically, retract, and record provenance."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Protocol

from pydantic import BaseModel
from pyoxigraph import Literal, NamedNode, Triple

from toolkg import PIPELINE_VERSION, __version__
from toolkg.config import BuildConfig, ExtractorName, Options
from toolkg.limits import Limits
from toolkg.models import (
    ExtractedManifest,
    ManifestFile,
    ManifestFormat,
    QuarantinedItem,
    ServerGraph,
    StageInfo,
    ToolChange,
)
from toolkg.ontology import PROV, RDF, RDFS, TK, XSD, iris, ontology_version
from toolkg.ontology.graphs import PROVENANCE_GRAPH, SERVER_GRAPH_PREFIX
from toolkg.store.oxigraph_store import ManifestRecord, ToolStore
from toolkg.store.tool_changes import diff_tools


class ExtractorIdentity(Protocol):
    """What of the semantic extractor a manifest's result depends on: its name and ``key()``."""

    name: str

    def key(self) -> str: ...


_CONFIG = BuildConfig.model_fields  # BuildOptions' defaults are BuildConfig's: one source for each


class BuildOptions(Options):
    """The options that change what a manifest yields; they are part of its fingerprint. Made from the run's
    ``BuildConfig`` by ``of`` (builds and syncs alike), so its fields and their defaults are the config's."""

    format: ManifestFormat | None = _CONFIG["format"].default
    server: str | None = _CONFIG["server"].default
    extractor: ExtractorName = _CONFIG["extractor"].default
    extractor_version: str  # the extractor's key(): no default, the extractor that runs says it
    # the fingerprints of the code of the stages that make a manifest's graphs, by stage (no default: the
    # pipeline's stages say it, flows.stages.manifest_code), so new code there rebuilds every manifest
    code: dict[str, str]
    hide_declared: bool = _CONFIG["hide_declared"].default  # drop declared dependencies (to evaluate inference)
    limits: Limits = _CONFIG["limits"].default  # how much of a manifest is read, what is trimmed (toolkg.limits)

    @classmethod
    def of(cls, config: BuildConfig, extractor: ExtractorIdentity, code: Mapping[str, str]) -> BuildOptions:
        """The options of a run with ``config`` whose semantic extractor is ``extractor`` and whose per-manifest
        stages' code has the fingerprints ``code``."""
        shared = {name: getattr(config, name) for name in cls.model_fields if name in _CONFIG}
        identity = {"extractor": extractor.name, "extractor_version": extractor.key(), "code": dict(code)}
        return cls.model_validate(shared | identity)


def live_listing_wins(path: str, server_id: str, listing: str) -> QuarantinedItem:
    """A static manifest's definition of a live server's id, refused: the live listing wins (builds and syncs
    alike, flows/live_precedence.py). ``listing``: which listing owns the id, as the reason shows it."""
    reason = (
        f"server id {server_id!r} is a live server's, {listing}: the live listing wins over this static "
        "definition (rename the server here to keep both)"
    )
    return QuarantinedItem(source=path, item=server_id, stage="load", reason=reason)


def fingerprint(file: ManifestFile, options: BuildOptions) -> str:
    """Equal fingerprints mean an identical result: same bytes, pipeline version, ontology, options and code of
    the stages that make it (``options.code``)."""
    key = {"sha256": file.sha256, "pipeline": PIPELINE_VERSION, "ontology": ontology_version(), **options.model_dump()}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


class LoadResult(StageInfo):
    path: str
    graphs: tuple[str, ...] = ()
    servers: int = 0
    tools: int = 0
    triples: int = 0
    tool_changes: tuple[ToolChange, ...] = ()  # the tools this load added, changed or removed

    def summary_fields(self) -> dict[str, object]:
        return {
            "loaded_servers": self.servers,
            "loaded_tools": self.tools,
            "loaded_triples": self.triples,
            "tools": list(self.tool_changes),
        }


class ManifestParts(BaseModel):
    """What the earlier batches of one big manifest loaded, until its last batch writes the record."""

    graphs: list[str] = []
    unresolved: set[str] = set()
    pending: set[str] = set()
    incomplete: bool = False  # a batch failed: the record is written without a fingerprint (rebuilt next run)
    seen: list[int] = []  # the parts met so far (their tool counts), loaded or not


def load_manifest(
    store: ToolStore,
    extracted: ExtractedManifest,
    file: ManifestFile,
    options: BuildOptions,
    previous: ManifestRecord | None,
    graph_owners: dict[str, str],
    run: NamedNode,
    parts: ManifestParts | None = None,
    final: bool = True,
    reserved: Mapping[str, str] | None = None,
) -> LoadResult:
    """Replace this manifest's graphs in one transaction.

    A server whose graph another manifest already owns is quarantined rather than
    overwritten: two files must not silently fight over one server id.
    ``graph_owners`` (graph IRI -> manifest path) is updated with what was loaded. ``reserved`` (server id ->
    the live snapshot listing it this run): another manifest's definition of such an id is quarantined, since
    the live listing wins (``flows/live_precedence.py``).

    A manifest too big for one batch comes in parts (whole servers each): every part but the
    last replaces its servers' graphs (each graph whole, in one transaction) and is noted in
    ``parts``; the last one also drops what the previous version defined and no longer does and
    writes the record. Until then the record still describes the previous version, so a build
    killed between parts finds the manifest changed and loads it again.
    """
    quarantined = []
    refused: set[str] = set()
    reserved = reserved or {}
    for g in extracted.graphs:
        live = reserved.get(g.server_id, file.path)
        if live != file.path and g.server_id not in refused:
            refused.add(g.server_id)
            quarantined.append(live_listing_wins(file.path, g.server_id, f"listed this run ({live})"))
            continue
        owner = graph_owners.get(g.graph.value)
        if owner is not None and owner != file.path and g.server_id not in refused:
            refused.add(g.server_id)
            quarantined.append(
                QuarantinedItem(
                    source=file.path,
                    item=g.server_id,
                    stage="load",
                    reason=f"server id {g.server_id!r} is already defined by {owner}",
                )
            )
    graphs = [g for g in extracted.graphs if g.server_id not in refused]  # with its tools' extraction graphs
    parts = parts or ManifestParts()
    parts.graphs += [g.graph.value for g in graphs]
    parts.unresolved |= set(extracted.unresolved)
    parts.pending |= set(extracted.pending)
    record = None
    keep_previous = final and parts.incomplete and previous is not None
    # A part failed: nothing of the previous version is dropped, the next run redoes it.
    if keep_previous and previous is not None:
        parts.graphs += [g for g in previous.graphs if g not in parts.graphs]
    if final:
        record = ManifestRecord(
            path=file.path,
            sha256=file.sha256,
            fingerprint="" if parts.incomplete else fingerprint(file, options),
            format=extracted.manifest.format,
            extractor=f"{options.extractor}/{options.extractor_version}",
            graphs=tuple(dict.fromkeys(parts.graphs)),
            unresolved=tuple(sorted(parts.unresolved)),
            pending=tuple(sorted(parts.pending)),
        )
    drop_graphs = previous.graphs if previous and final and not keep_previous else ()
    changes = _tool_changes(store, graphs, drop_graphs, set(parts.graphs), previous is not None)
    store.replace_manifest(record, [(g.graph, g.triples) for g in graphs], drop_graphs=drop_graphs, run=run)
    if final:
        for name in previous.graphs if previous else ():
            graph_owners.pop(name, None)
        for name in parts.graphs:
            graph_owners[name] = file.path
    else:
        for g in graphs:
            graph_owners[g.graph.value] = file.path
    return LoadResult(
        path=file.path,
        graphs=tuple(g.graph.value for g in graphs),
        servers=sum(not g.extraction_of for g in graphs),
        tools=sum(len(g.tool_ids) for g in graphs),
        triples=sum(len(g.triples) for g in graphs),
        quarantined=tuple(quarantined),
        tool_changes=tuple(changes),
    )


def _tool_changes(
    store: ToolStore, graphs: list[ServerGraph], dropped: Iterable[str], kept: set[str], replacing: bool
) -> list[ToolChange]:
    """The tools this load adds, changes or removes: each server graph written against its stored version
    (a new manifest's graphs are not stored yet: read nothing), and the server graphs it drops."""
    servers = [g for g in graphs if not g.extraction_of]
    if not replacing:  # every tool is new: no triple to compare
        return sorted((ToolChange(tool=i, change="added") for g in servers for i in g.tool_ids), key=lambda c: c.tool)
    before = [t for g in servers for t in store.graph_triples(g.graph)]
    gone = [NamedNode(g) for g in dropped if g not in kept and g.startswith(SERVER_GRAPH_PREFIX)]
    before += [t for g in gone for t in store.graph_triples(g)]
    return diff_tools(before, [t for g in servers for t in g.triples])


def _datetime(value: datetime) -> Literal:
    return Literal(value.isoformat(), datatype=XSD.dateTime)


def record_run(
    store: ToolStore,
    run_id: str,
    started: datetime,
    ended: datetime,
    used: list[ManifestFile],
    removed: list[str],
    options: BuildOptions,
    removed_graphs: Iterable[str] = (),
) -> None:
    """A PROV-O activity for the run: when, which manifest versions it used, which software, which manifests
    (``removed``) or server graphs (``removed_graphs``: a sync's removed servers) it invalidated."""
    run = iris.run_iri(run_id)
    agent = iris.agent_iri(f"toolkg-{options.extractor}", f"{__version__}+{options.extractor_version}")
    triples = [
        Triple(run, RDF.type, TK.BuildRun),
        Triple(run, RDF.type, PROV.Activity),
        Triple(run, TK.runId, Literal(run_id)),
        Triple(run, PROV.startedAtTime, _datetime(started)),
        Triple(run, PROV.endedAtTime, _datetime(ended)),
        Triple(run, PROV.wasAssociatedWith, agent),
        Triple(run, TK.pipelineVersion, Literal(PIPELINE_VERSION)),
        Triple(run, TK.ontologyVersion, Literal(ontology_version())),
        Triple(agent, RDF.type, PROV.SoftwareAgent),
        Triple(agent, RDFS.label, Literal(f"toolkg {__version__}, {options.extractor} extractor")),
        Triple(agent, TK.extractor, Literal(options.extractor)),
        Triple(agent, TK.version, Literal(options.extractor_version)),
    ]
    for index, file in enumerate(used):
        usage = NamedNode(f"{run.value}/used/{index}")
        triples += [
            Triple(run, PROV.used, iris.manifest_iri(file.path)),
            Triple(run, PROV.qualifiedUsage, usage),
            Triple(usage, RDF.type, PROV.Usage),
            Triple(usage, PROV.entity, iris.manifest_iri(file.path)),
            Triple(usage, TK.sourcePath, Literal(file.path)),
            Triple(usage, TK.sha256, Literal(file.sha256)),
        ]
    for path in removed:
        # The manifest's own record goes with it, so its path stays on in the provenance graph.
        triples.append(Triple(run, PROV.invalidated, iris.manifest_iri(path)))
        triples.append(Triple(iris.manifest_iri(path), TK.sourcePath, Literal(path)))
    triples += [Triple(run, PROV.invalidated, NamedNode(graph)) for graph in removed_graphs]
    store.add_to_graph(PROVENANCE_GRAPH, triples)
