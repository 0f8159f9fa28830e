"""Infer: dependency edges between every stored tool (an LLM reviews them when configured), one inferred graph."""

from __future__ import annotations

from collections import ChainMap, Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolkg.canonicalize.inference.acyclic import Changing, dropped_pairs
from toolkg.canonicalize.inference.entities import keep_label_vectors_in
from toolkg.canonicalize.inference.incremental import IncrementalInference
from toolkg.canonicalize.inference.infer import infer_dependencies
from toolkg.config import InferenceOptions
from toolkg.flows.stages.base import CatalogRun, CatalogStage, Change, StageState, StageUpdate
from toolkg.models import Annotations, InferredEdge, OutputField, Parameter, QuarantinedItem, StageInfo, Tool
from toolkg.ontology import TK
from toolkg.ontology.graphs import INFERRED_GRAPH
from toolkg.ontology.vocabulary import Basis
from toolkg.paths import store_cache
from toolkg.stages import StageBase, StageName
from toolkg.store.build_state import options_digests
from toolkg.store.catalog_reads import server_catalogs
from toolkg.store.dependencies import declared_pairs, dependency_rows, edge_triples, tool_id_of
from toolkg.store.records import ToolRecord
from toolkg.usage import Confirmation, OrEmpty

if TYPE_CHECKING:
    from toolkg.canonicalize.inference.confirm import DependencyConfirmer

EdgeKey = tuple[str, str, str | None]  # consumer, producer, parameter


def _edge_key(e: InferredEdge) -> EdgeKey:
    return (e.consumer, e.producer, e.parameter)


@dataclass
class InferState(StageState):
    """What incremental inference keeps warm: the stored inferred edges (indexed by consumer and by
    producer), each server's catalog (inference keeps unrelated catalogs apart; a change sets the
    catalog of each server it writes) and the incremental engine, which holds the declared pairs."""

    edges: dict[EdgeKey, InferredEdge]
    catalogs: dict[str, str]
    engine: IncrementalInference
    looped: set[tuple[str, str]] = field(default_factory=set)  # the engine's pairs ``acyclic`` leaves out
    # the stored graph was inferred with other options or rules than the session's: the first update
    # redecides every consumer, so the graph is what these options give (as a build's rerun would make it)
    redo: bool = False
    by_consumer: dict[str, set[EdgeKey]] = field(default_factory=lambda: defaultdict(set))
    by_producer: dict[str, set[EdgeKey]] = field(default_factory=lambda: defaultdict(set))

    def __post_init__(self) -> None:
        for key in self.edges:
            self.by_consumer[key[0]].add(key)
            self.by_producer[key[1]].add(key)

    @property
    def options(self) -> InferenceOptions:
        return self.engine.options

    @property
    def declared(self) -> set[tuple[str, str]]:
        return self.engine.declared

    def replace(self, stale: Iterable[EdgeKey], fresh: Iterable[InferredEdge]) -> None:
        for key in stale:
            del self.edges[key]
            self.by_consumer[key[0]].discard(key)
            self.by_producer[key[1]].discard(key)
        for e in fresh:
            key = _edge_key(e)
            self.edges[key] = e
            self.by_consumer[key[0]].add(key)
            self.by_producer[key[1]].add(key)


class InferInfo(StageInfo):
    """Inferred edges by kind (and total), and the LLM review when one ran."""

    inferred: dict[str, int] = {}
    confirmation: OrEmpty[Confirmation] = None

    def lines(self) -> list[str]:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.inferred.items()) if k != "total")
        out = [f"inferred dependencies: {self.inferred['total']}" + (f" ({kinds})" if kinds else "")]
        if (c := self.confirmation) is not None:
            out.append(
                f"LLM review of inferred dependencies ({c.model}): {c.confirmed} confirmed, {c.rejected} "
                f"rejected, {c.unjudged} unjudged; {c.cache_hits} cache hits, {c.http_requests} HTTP "
                f"requests ({c.retries} retries, {c.reasks} re-asks)"
                + (f"; cost {c.cost:.4f}" if c.cost is not None else "")
            )
        return out


def confirm_edges(
    confirmer: DependencyConfirmer, edges: list[InferredEdge], tools: list[ToolRecord], run_id: str
) -> tuple[list[InferredEdge], Confirmation, tuple[QuarantinedItem, ...]]:
    """An LLM's review of the inferred ``edges``: the edges kept, the review's figures (the summary's
    ``confirmation``) and an entry per edge it could not judge (kept unconfirmed)."""
    review = confirmer.review(edges, tools, run_id)
    kept = review.edges
    confirmation = Confirmation.model_validate(
        confirmer.usage()
        | {
            "confirmed": sum(e.basis == Basis.LLM for e in kept),
            "rejected": len(review.rejected),
            "unjudged": len(review.unjudged),
            "rejected_edges": [f"{e.consumer} <- {e.producer}: {why}" for e, why in review.rejected[:200]],
        }
    )
    unjudged = tuple(
        QuarantinedItem(
            source="dependency inference",
            item=f"{edge.consumer} <- {edge.producer}",
            stage=StageName.CONFIRM,
            reason=f"{why} (kept unconfirmed)",
        )
        for edge, why in review.unjudged
    )
    return kept, confirmation, unjudged


class Confirm(StageBase):
    """An LLM's review of the inferred edges (``build.confirm_deps``), run inside the infer stage (its time is
    infer's; the edges it could not judge are quarantined under its name)."""

    name = StageName.CONFIRM
    section = "build"  # confirm_deps, llm_config
    part_of = StageName.INFER
    code = ("toolkg.canonicalize.inference.confirm",)
    run = staticmethod(confirm_edges)


CONFIRM = Confirm()


class Infer(CatalogStage[InferState]):
    """Infer dependencies over every stored tool (an LLM reviews them when configured) and swap the
    inferred graph."""

    name = StageName.INFER
    result = InferInfo
    section = "inference"
    graph = INFERRED_GRAPH
    code = ("toolkg.canonicalize", "toolkg.text")

    def wanted(self, run: CatalogRun) -> bool:
        return run.config.infer

    def extra_options(self, run: CatalogRun) -> dict[str, Any]:
        return {"confirmed": run.confirmer is not None}

    def due(self, run: CatalogRun, changed: bool, pending: set[str], digests: dict[str, str]) -> bool:
        return run.confirmer is not None or super().due(run, changed, pending, digests)

    def run(self, run: CatalogRun) -> InferInfo:
        tools, store = run.tools(), run.store
        keep_label_vectors_in(store_cache(store.directory, "embeddings"))  # the entity labels' (entities.py)
        edges = infer_dependencies(
            tools, run.config.inference, declared=declared_pairs(store), catalogs=server_catalogs(store)
        )
        confirmation: Confirmation | None = None
        unjudged: tuple[QuarantinedItem, ...] = ()
        if run.confirmer is not None:
            edges, confirmation, unjudged = CONFIRM.run(run.confirmer, edges, tools, run.run_id)
        store.replace_graph(INFERRED_GRAPH, edge_triples(edges, tools))
        inferred = dict(Counter(e.kind for e in edges)) | {"total": len(edges)}
        return InferInfo(inferred=inferred, confirmation=confirmation, quarantined=unjudged)

    # --- incremental sync ----------------------------------------------------------------------

    def warm(self, run: CatalogRun) -> InferState:
        """The stored inferred edges (declared ones are the manifests', not this stage's), and the
        incremental engine over the stored catalog with the run's inference options: every tool's
        profile, offers and rule edges computed ahead, so a session's first change costs what the later
        ones do."""
        store = run.store
        keep_label_vectors_in(store_cache(store.directory, "embeddings"))
        edges = {
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
            if r["basis"] != Basis.DECLARED
        }
        catalogs = server_catalogs(store)
        engine = IncrementalInference(run.tools(), run.config.inference, declared_pairs(store), catalogs)
        looped = dropped_pairs(_all_edges(engine), engine.declared, _changing(engine))
        return InferState(edges, catalogs, engine, looped, redo=not self._inferred_alike(run))

    def _inferred_alike(self, run: CatalogRun) -> bool:
        """Whether the stored graph was inferred with the run's options and this code: the digest the
        build recorded is one this run's would be, with or without an LLM's review (a sync reviews
        nothing; what a review decided stays outside the changes' neighbourhoods, as it always has)."""
        recorded = options_digests(run.store).get(self.name)
        extra = self.extra_options(run)
        return recorded in {self.digest_with(run, extra | {"confirmed": confirmed}) for confirmed in (False, True)}

    def update(self, state: InferState, change: Change) -> StageUpdate:
        """Re-infer what the change reaches (``IncrementalInference``: the changed tools' neighbourhood,
        widened where a catalog-wide count crosses its threshold), exactly as a rebuild would infer it.
        Reports the consumers the change reached and the edges added and removed; the triples go into
        ``change``."""
        engine = state.engine
        state.catalogs.update(change.catalogs)  # the engine's own mapping: read by ``apply``
        before = {i: engine.index.profiles[i].tool for i in change.touched if i in engine.index.profiles}
        found = engine.apply({i: as_read(change.tools[i]) for i in change.changed}, change.removed)
        added, dropped = _declared_changes(change)
        if added or dropped:
            found |= engine.refresh(engine.set_declared(added, dropped))
        # a stored edge from a removed tool goes whatever its consumer (a store inferred otherwise: an LLM's)
        for key in {k for i in change.removed for k in state.by_producer.get(i, ())}:
            found.setdefault(key[0], engine.final.get(key[0], []))
        if state.redo:  # once: every consumer, those with stored edges and those with edges now
            for consumer in engine.final.keys() | state.by_consumer.keys():
                found.setdefault(consumer, engine.final.get(consumer, []))
            state.redo = False
        # a loop is the whole catalog's: a pair the change adds may close one elsewhere (or open one again)
        looped = dropped_pairs(_all_edges(engine), engine.declared, _changing(engine))
        for consumer, _ in looped ^ state.looped:
            found.setdefault(consumer, engine.final.get(consumer, []))
        state.looped = looped
        found = {i: [e for e in edges if (e.consumer, e.producer) not in looped] for i, edges in found.items()}
        stale_keys = {k for i in found for k in state.by_consumer.get(i, ())}
        stale = [state.edges[k] for k in stale_keys]
        fresh = [e for edges in found.values() for e in edges]
        # Edges sharing a (consumer, producer) pair share triples (tk:dependsOn ...); both sets hold
        # every edge of such a pair, so a set difference never retracts a triple still wanted.
        old_triples = set(edge_triples(stale, ChainMap(before, change.tools)))
        new_triples = set(edge_triples(fresh, change.tools))
        change.patch(INFERRED_GRAPH, old_triples - new_triples, new_triples - old_triples)
        old, new = {_edge_key(e): e for e in stale}, {_edge_key(e): e for e in fresh}
        state.replace(stale_keys, fresh)
        return StageUpdate(
            neighbourhood=max(engine.reached, len(found)),
            edges_added=sum(old.get(k) != e for k, e in new.items()),
            edges_removed=sum(new.get(k) != e for k, e in old.items()),
        )


def _changing(engine: IncrementalInference) -> Changing:
    """The engine's tools that change state, as ``acyclic`` orders a loop's pairs by them."""
    return Changing.of_profiles(engine.index.profiles)


def _all_edges(engine: IncrementalInference) -> list[InferredEdge]:
    """Every consumer's edges, unsorted: which pairs close a loop does not depend on their order."""
    return [e for edges in engine.final.values() for e in edges]


def as_read(tool: Tool) -> Tool:
    """A tool as a rebuild reads it back from the store (``read_tools``), which is what inference must see
    to infer what a rebuild infers: its name, description, parameters (name, requirement, location,
    description, JSON type, sorted enum values), output names and types, and the schema names ``$ref``s gave the
    outputs."""
    return ToolRecord(
        server_id=tool.server_id,
        name=tool.name,
        description=tool.description or "",
        parameters=tuple(
            Parameter(
                name=p.name,
                json_type=p.json_type,
                required=p.required,
                location=p.location,
                description=p.description or "",
                enum=tuple(sorted(p.enum)),
            )  # fmt: skip
            for p in tool.parameters
        ),
        outputs=tuple(OutputField(name=o.name, json_type=o.json_type, schema_name=o.schema_name) for o in tool.outputs),
        route=tool.route,
        output_schema_name=tool.output_schema_name,
        # the hints a store keeps: which tools change state orders a loop's pairs (acyclic.py)
        annotations=None
        if tool.annotations is None
        else Annotations(read_only=tool.annotations.read_only, destructive=tool.annotations.destructive),
    )


def _declared_changes(change: Change) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """The declared (consumer, producer) pairs a change adds and drops: a server graph's tk:dependsOn
    triples are its manifest's declared dependencies (inferred ones live in their own graph)."""
    found: tuple[set, set] = (set(), set())
    for into, patch in zip(found, (change.insertions, change.deletions), strict=True):
        for graph, triples in patch.items():
            if graph == INFERRED_GRAPH:
                continue
            for t in triples:
                if t.predicate == TK.dependsOn:
                    consumer, producer = tool_id_of(t.subject), tool_id_of(t.object)
                    if consumer and producer:
                        into.add((consumer, producer))
    return found
