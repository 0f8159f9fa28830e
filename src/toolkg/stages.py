"""The pipeline's stages by name, and the one context every stage runs in.

``StageName`` is the vocabulary: the build state, the run summary's timings and peaks, the
quarantine entries, the crash hooks and the benchmarks all name stages with it (a ``StrEnum``, so a
stage's name is also its plain string in JSON and in ``TOOLKG_FAULT``).

``StageContext.stage(name)`` does, for every stage alike, what each stage used to wire by hand:

- the stage's wall time is added to the run summary (``stage_seconds``);
- the memory sampler counts the peak resident memory while it runs against it (``stage_peak_mb``);
- a progress line is started and ended (counts reported through the handle);
- with ``contain=True`` a failure becomes a quarantine entry for ``item`` (one line, the stage's
  name) and the run carries on; the handle says whether the stage succeeded.

    with ctx.stage(StageName.INFER, unit="tools") as stage:
        ...
        stage.report(len(tools))
    if stage.ok: ...

What a stage *is* is ``Stage`` (below): its name, the ``BuildConfig`` section its options come from, the
modules whose code decides its result (hashed: ``fingerprint``), ``run`` returning a typed result, and, for
incremental sync, ``update`` (``IncrementalStage``). ``toolkg.flows.stages.PIPELINE`` declares all of them,
once, in pipeline order: the one place to find where each stage's code is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import psutil

from toolkg import progress
from toolkg.failures import quarantine
from toolkg.fingerprint import source_fingerprint

if TYPE_CHECKING:
    from toolkg.models import StageInfo
    from toolkg.summary import BuildSummary


class StageName(StrEnum):
    """Every stage of a build, in pipeline order (the first three read inputs, the next three run per
    manifest batch, the last seven over the whole stored catalog)."""

    LIST = "list"  # live MCP servers listed into snapshots (toolkg.live)
    READ = "read"  # a manifest file hashed and decoded (its quarantine entries; timed as part of ingest)
    INGEST = "ingest"  # manifests found and parsed into typed models, the names they may refer to indexed
    EXTRACT = "extract"  # structural triples, with the semantic extractor's results turned into RDF
    EXTRACT_SEMANTIC = "extract-semantic"  # the triple extractor itself (offline rules or an LLM)
    VALIDATE = "validate"  # SHACL over each manifest's graphs
    LOAD = "load"  # one transaction per manifest, plus the run's provenance record
    CANONICALIZE = "canonicalize"  # store-wide entity clusters
    INFER = "infer"  # dependency edges
    CONFIRM = "confirm"  # an LLM's review of the inferred edges (part of infer)
    LINK = "link"  # structural links (embeddings)
    AUDIT = "audit"  # findings about each tool's text: injection, hidden, shadowing, changed; toxic flows over toolsets
    INDEX = "index"  # the retrieval index toolkg retrieve maps (toolkg.retrieval.index_files)
    SNAPSHOT = "snapshot"  # the read-only copy the endpoint serves


CATALOG = "catalog"  # the item a catalog-wide stage's quarantine entry names


@runtime_checkable
class Stage(Protocol):
    """One stage of the pipeline (neo4j-graphrag's ``Component``, dlt's ``StepInfo``): what every entry of
    ``toolkg.flows.stages.PIPELINE`` is. A stage timed inside another (``read`` in ingest, ``confirm`` in
    infer) names that one as ``part_of``."""

    @property
    def name(self) -> StageName: ...

    @property
    def section(self) -> str | None:
        """The ``BuildConfig`` section its options are read from (``None``: it has none of its own)."""
        ...

    @property
    def part_of(self) -> StageName | None: ...

    def fingerprint(self) -> str:
        """A hash of the code that decides its result."""
        ...

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """The stage's work: its input in, its typed result out."""
        ...


@runtime_checkable
class IncrementalStage(Stage, Protocol):
    """A stage that can also follow an incremental change (``toolkg.flows.sync``) rather than rerun whole."""

    def update(self, state: Any, change: Any) -> Any: ...


class StageBase:
    """What every stage class states as class attributes, and the fingerprint of its code: the ``Stage``
    protocol's common part, so the catalog-wide stages and the per-manifest ones declare it alike."""

    name: ClassVar[StageName]
    section: ClassVar[str | None] = None
    part_of: ClassVar[StageName | None] = None
    code: ClassVar[tuple[str, ...]] = ()  # the modules (a package: all its modules) whose code decides its result
    # The typed result whose figures the run summary keeps under the stage's name (``StageInfo.stage``).
    result: ClassVar[type[StageInfo] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Name the stage's result after the stage: the name is stated once, on the stage."""
        super().__init_subclass__(**kwargs)
        result = cls.__dict__.get("result")
        if result is not None:
            if result.stage and result.stage != cls.name:
                raise TypeError(f"{result.__name__} is already the result of stage {str(result.stage)!r}")
            result.stage = cls.name

    def fingerprint(self) -> str:
        return source_fingerprint(self.code)


class MemorySampler:
    """Peak resident memory (RSS) of this process and all its descendants (validation workers, Dask
    workers, a temporary Prefect server), sampled ten times a second and kept per stage: the stage
    that was current when the sample was taken. RSS counts pages shared between processes once per
    process, so the sum errs high, never low."""

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self.current = "other"  # outside every stage: opening the store, reading its records, the summary
        self.peaks: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="toolkg-memory", daemon=True)

    def _sample(self) -> None:
        try:
            rss = total_rss()
        except psutil.Error:
            return
        name = self.current
        if rss > self.peaks.get(name, 0):
            self.peaks[name] = rss

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def start(self) -> MemorySampler:
        self._sample()
        self._thread.start()
        return self

    def stop(self) -> dict[str, float]:
        """End sampling; the peak per stage in MiB. No last sample: taken after every stage, it would
        credit the run's high-water mark (nothing is freed yet) to "other"."""
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join()
        return {name: round(rss / 2**20, 1) for name, rss in self.peaks.items()}


def total_rss() -> int:
    """Bytes resident in this process and all its descendants (a process gone meanwhile counts 0)."""
    me = psutil.Process()
    total = me.memory_info().rss
    for child in me.children(recursive=True):
        try:
            total += child.memory_info().rss
        except psutil.Error:
            pass
    return total


@dataclass
class StageHandle:
    """What a running stage reports through: its progress, and afterwards whether it succeeded."""

    name: StageName
    unit: str
    total: int | None = None
    ok: bool = True

    def report(self, done: int, total: int | None = None) -> None:
        """``done`` of ``total`` (default: the stage's total) items so far."""
        progress.report(self.name.value, done, total if total is not None else self.total, self.unit)


@dataclass
class StageContext:
    """The run-wide context the stages share: the summary they fold into, the memory sampler, and
    where a catalog-wide failure is quarantined from (the store's path)."""

    summary: BuildSummary
    sampler: MemorySampler = field(default_factory=MemorySampler)

    @contextmanager
    def stage(
        self,
        name: StageName,
        *,
        total: int | None = None,
        unit: str = "tools",
        contain: bool = False,
        item: str = CATALOG,
        source: str | None = None,
        show: bool = True,
    ) -> Iterator[StageHandle]:
        """Run the block as stage ``name`` (see the module's docstring). ``contain`` turns a failure into a
        quarantine entry for ``item`` (read from ``source``: the store by default) instead of raising;
        ``show=False`` keeps the progress line for the stage's own reports (a stage entered many times,
        once per batch)."""
        handle = StageHandle(name, unit, total)
        clock = time.perf_counter()
        outer, self.sampler.current = self.sampler.current, name.value
        if show:
            progress.start(name.value, total, unit)
        try:
            yield handle
        except Exception as exc:
            if not contain:
                raise
            handle.ok = False
            where = source if source is not None else self.summary.store
            self.summary.quarantined.append(quarantine(exc, source=where, item=item, stage=name.value))
        finally:
            self.summary.add_time(name.value, time.perf_counter() - clock)
            self.sampler.current = outer
            if show:
                progress.done(name.value)


class Stopwatch:
    """Seconds per stage for work done away from the run's context (on a Dask worker); the work hands
    them back in its info, which the pipeline folds into the summary."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def stage(self, name: StageName, **_: object) -> Iterator[None]:
        clock = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name.value] = self.seconds.get(name.value, 0.0) + time.perf_counter() - clock


Timer = StageContext | Stopwatch  # what per-manifest work times its stages with
