"""What every catalog-wide stage is: ``CatalogStage``, and ``CatalogRun``, what the stages of one run share.

A stage serves a build (``run``: the whole catalog, its graph swapped) and an incremental sync (``warm`` once
per session, then ``update`` per change, before sync writes, and ``after_write``, after it): one contract, so
sync goes through ``CATALOG_STAGES`` with the run's ``BuildConfig`` as a build does (flows/sync/catalog.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import BaseModel
from pyoxigraph import Literal, NamedNode, Triple

from toolkg.config import BuildConfig
from toolkg.models import StageInfo, Tool
from toolkg.ontology import TK
from toolkg.ontology.graphs import STATE_GRAPH
from toolkg.stages import StageBase, StageContext
from toolkg.store.build_state import stage_node
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.records import ToolRecord, read_tools

if TYPE_CHECKING:
    from toolkg.canonicalize.inference.confirm import DependencyConfirmer

T = TypeVar("T")
# How a step's work is run: in this process (the default), or as a Prefect task (flows/build.py).
Runner = Callable[..., Any]


def in_process(name: str, work: Callable[..., T], *args: Any) -> T:
    return work(*args)


class Prefetch(Protocol):
    """Work a stage started ahead of its turn (``CatalogStage.prefetch``: the link stage's embedding of the new
    tools' texts, ``toolkg.embeddings.ahead``), stopped by the stage itself or at the run's end."""

    def finish(self) -> None: ...


@dataclass
class CatalogRun:
    """What the catalog-wide stages of one run share: the store, the run's context, its options, and
    the stored catalog (read once, by the first stage that needs it)."""

    store: ToolStore
    ctx: StageContext
    config: BuildConfig = field(default_factory=BuildConfig)
    confirmer: DependencyConfirmer | None = None  # an LLM reviews inferred edges
    prefetched: dict[str, Prefetch] = field(default_factory=dict)  # by stage name (``CatalogStage.prefetch``)
    runner: Runner = in_process
    _tools: list[ToolRecord] | None = None

    @property
    def run_id(self) -> str:
        return self.ctx.summary.run_id

    def tools(self) -> list[ToolRecord]:
        """Every stored tool, as inference and links read it (read on first use, then shared)."""
        if self._tools is None:
            self._tools = read_tools(self.store)
        return self._tools

    def finish_prefetch(self, stage: str | None = None) -> None:
        """Stop the prefetch of ``stage`` (every stage's when None); what it did is kept. Idempotent."""
        for name in [stage] if stage is not None else list(self.prefetched):
            work = self.prefetched.pop(name, None)
            if work is not None:
                work.finish()


@dataclass
class Change:
    """One incremental change to a stored catalog (``toolkg.flows.sync``), as the stages' ``update`` reads
    it, and the triples they retract and add for it (by graph, written by sync in one transaction)."""

    changed: set[str]  # tools added, or whose text changed
    removed: set[str]  # tools gone
    before: list[Tool]  # the catalog before the change (retracted edge triples name parameters as they were)
    tools: dict[str, Tool]  # the catalog after it
    deletions: dict[NamedNode, set[Triple]] = field(default_factory=dict)
    insertions: dict[NamedNode, set[Triple]] = field(default_factory=dict)
    # server id -> the catalog it belongs to now (its manifest's folder), for each server the change writes:
    # inference keeps unrelated catalogs apart, so a server moved to another folder is judged anew
    catalogs: dict[str, str] = field(default_factory=dict)

    @property
    def touched(self) -> set[str]:
        return self.changed | self.removed

    def patch(self, graph: NamedNode, retract: set[Triple], add: set[Triple]) -> None:
        self.deletions.setdefault(graph, set()).update(retract)
        self.insertions.setdefault(graph, set()).update(add)


@dataclass
class StageUpdate:
    """What one stage's ``update`` (or ``after_write``) changed, in the figures a sync's result reports
    (``SyncResult.fold``): each stage fills the ones it has."""

    neighbourhood: int = 0  # consumers re-inferred
    edges_added: int = 0
    edges_removed: int = 0
    links_added: int = 0
    links_removed: int = 0
    seconds: dict[str, float] = field(default_factory=dict)  # parts timed apart (the link stage's "embed")


class StageState:
    """What a stage keeps warm between a sync session's changes (``CatalogStage.warm``). A stage with nothing to
    keep uses this one; a stage holding a model or a file subclasses it to load it early and release it."""

    def preload(self) -> None:
        """Pay the one-time loads now (a long-lived session does; a one-shot sync leaves them to first use)."""

    def close(self) -> None:
        """Release what the state holds (the session is over)."""


S = TypeVar("S", bound=StageState)


class CatalogStage(StageBase, Generic[S]):
    """One catalog-wide stage. Subclasses set the class attributes (``StageBase``'s: name, options section,
    code; and the graph it swaps) and ``run``; for incremental sync, a stage that can follow a change to a few
    tools overrides ``warm`` and ``update`` (``S`` is what it keeps warm)."""

    graph: ClassVar[NamedNode | None] = None  # the named graph it swaps
    unit: ClassVar[str] = "tools"  # what its progress line counts

    def wanted(self, run: CatalogRun) -> bool:
        """Whether this build runs the stage at all (a stage switched off has its graph dropped)."""
        return True

    def options(self, run: CatalogRun) -> BaseModel | None:
        """The options its result depends on besides the catalog: its ``section`` of the run's config."""
        return getattr(run.config, self.section) if self.section else None

    def digest(self, run: CatalogRun) -> str:
        """Options and code, hashed: a store built with other options or older rules is brought up to date."""
        return self.digest_with(run, self.extra_options(run))

    def digest_with(self, run: CatalogRun, extra: dict[str, Any]) -> str:
        """The digest with ``extra`` standing for ``extra_options(run)`` (what another run would record)."""
        options = self.options(run)
        key: dict[str, Any] = {"options": options.model_dump() if options else {}, "code": self.fingerprint()}
        key["options"] |= extra
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]

    def extra_options(self, run: CatalogRun) -> dict[str, Any]:
        return {}

    def due(self, run: CatalogRun, changed: bool, pending: set[str], digests: dict[str, str]) -> bool:
        """Run when the catalog changed, when an earlier build owes it, when its options or code differ
        from the last time it ran, or when its graph is missing."""
        stale = digests.get(self.name) != self.digest(run)
        missing = self.graph is not None and not run.store.has_graph(self.graph)
        return changed or self.name in pending or stale or missing

    def prefetch(self, run: CatalogRun, tools: Sequence[Tool]) -> Prefetch | None:
        """Work the stage can start right after ingest, beside extraction and loading, on the ``tools`` being
        (re)loaded: it must only do what ``run`` would do itself (a failed prefetch costs time, never a
        result). ``run`` stops it (``CatalogRun.finish_prefetch``); the run's end stops any left. None by default."""
        return None

    def run(self, run: CatalogRun) -> StageInfo:
        raise NotImplementedError

    def size(self, run: CatalogRun, info: StageInfo) -> int | None:
        """How many items it went over (its progress line's final count)."""
        return len(run.tools())

    # --- incremental sync (flows/sync/catalog.py) ------------------------------------------------
    # A sync session calls ``warm`` once, then, for each change, ``update`` before it writes (the triples go
    # into the change: one transaction with the rest of the operation) and ``after_write`` once it has.

    def warm(self, run: CatalogRun) -> S:
        """What the stage keeps between a session's changes, loaded once. By default nothing."""
        return StageState()  # type: ignore[return-value]  # S is StageState for a stage that keeps nothing

    def update(self, state: S, change: Change) -> StageUpdate:
        """Bring the stage's output up to date for ``change``, into ``change``. By default the stage cannot
        follow a change at what a sync may cost (it is redone over the whole catalog): it is marked pending
        in the sync's own transaction, and the next build redoes it."""
        change.patch(STATE_GRAPH, set(), {Triple(stage_node(self.name), TK.pendingSince, Literal("sync"))})
        return StageUpdate()

    def after_write(self, state: S, change: Change) -> StageUpdate:
        """After the sync wrote ``change``: a stage that reads the store as written does so here (a second
        transaction). By default nothing."""
        return StageUpdate()
