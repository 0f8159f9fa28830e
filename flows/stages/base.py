"""What every catalog-wide stage is: ``CatalogStage``, and ``CatalogRun``, what the stages of one run share."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from pydantic import BaseModel
from pyoxigraph import NamedNode, Triple

from toolkg.config import BuildConfig
from toolkg.embeddings.ahead import EmbedAhead
from toolkg.fingerprint import source_fingerprint
from toolkg.models import StageInfo, Tool
from toolkg.stages import StageContext, StageName
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.records import ToolRecord, read_tools

if TYPE_CHECKING:
    from toolkg.canonicalize.inference.confirm import DependencyConfirmer

T = TypeVar("T")
# How a step's work is run: in this process (the default), or as a Prefect task (flows/build.py).
Runner = Callable[..., Any]


def in_process(name: str, work: Callable[..., T], *args: Any) -> T:
    return work(*args)


@dataclass
class CatalogRun:
    """What the catalog-wide stages of one run share: the store, the run's context, its options, and
    the stored catalog (read once, by the first stage that needs it)."""

    store: ToolStore
    ctx: StageContext
    config: BuildConfig = field(default_factory=BuildConfig)
    confirmer: DependencyConfirmer | None = None  # an LLM reviews inferred edges
    ahead: EmbedAhead | None = None  # new tool texts being embedded beside the other stages
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

    def finish_ahead(self) -> None:
        """Stop the embed-ahead worker (what it embedded is in the cache); idempotent."""
        if self.ahead is not None:
            self.ahead.finish()
            self.ahead = None


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

    @property
    def touched(self) -> set[str]:
        return self.changed | self.removed

    def patch(self, graph: NamedNode, retract: set[Triple], add: set[Triple]) -> None:
        self.deletions.setdefault(graph, set()).update(retract)
        self.insertions.setdefault(graph, set()).update(add)


def code_fingerprint(code: tuple[str, ...]) -> str:
    """sha256 of the source of the modules (a package: all its modules) behind a stage."""
    return source_fingerprint(code)


class CatalogStage:
    """One catalog-wide stage. Subclasses set the class attributes and ``run``."""

    name: ClassVar[StageName]
    graph: ClassVar[NamedNode | None] = None  # the named graph it swaps
    unit: ClassVar[str] = "tools"  # what its progress line counts
    code: ClassVar[tuple[str, ...]] = ()  # the modules whose code decides its result

    def wanted(self, run: CatalogRun) -> bool:
        """Whether this build runs the stage at all (a stage switched off has its graph dropped)."""
        return True

    def options(self, run: CatalogRun) -> BaseModel | None:
        """The options its result depends on besides the catalog."""
        return None

    def digest(self, run: CatalogRun) -> str:
        """Options and code, hashed: a store built with other options or older rules is brought up to date."""
        options = self.options(run)
        key: dict[str, Any] = {"options": options.model_dump() if options else {}, "code": self.fingerprint()}
        key["options"] |= self.extra_options(run)
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]

    def extra_options(self, run: CatalogRun) -> dict[str, Any]:
        return {}

    def fingerprint(self) -> str:
        return code_fingerprint(self.code)

    def due(self, run: CatalogRun, changed: bool, pending: set[str], digests: dict[str, str]) -> bool:
        """Run when the catalog changed, when an earlier build owes it, when its options or code differ
        from the last time it ran, or when its graph is missing."""
        stale = digests.get(self.name) != self.digest(run)
        missing = self.graph is not None and not run.store.has_graph(self.graph)
        return changed or self.name in pending or stale or missing

    def run(self, run: CatalogRun) -> StageInfo:
        raise NotImplementedError

    def size(self, run: CatalogRun, info: StageInfo) -> int | None:
        """How many items it went over (its progress line's final count)."""
        return len(run.tools())
