"""The pipeline, without Prefect: list -> ingest -> extract -> load -> the catalog-wide stages -> snapshot.

``run_pipeline`` builds (or incrementally updates) the knowledge graph in a store from manifest
paths, running the stages ``toolkg.flows.stages.PIPELINE`` declares (where each stage's code is).
Every stage runs in the run's ``StageContext`` (timing, memory, progress, quarantine: one place,
``toolkg.stages``); per-manifest work goes in batches (flows/steps.py); the catalog-wide stages run
once per build over the whole stored catalog, when the catalog changed, an earlier build owes them,
or their options changed (flows/stages/).

How each step runs is the caller's: ``runner`` runs a step's function in this process by default;
the build flow (flows/build.py) passes one that runs it as a Prefect task, and ``fan_out`` sends the
extraction batches to a Dask cluster. The layering test checks this module imports no Prefect.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from toolkg import progress
from toolkg.config import BuildConfig
from toolkg.disk import disk_full_error, notice
from toolkg.errors import ConfigError, NotFoundError
from toolkg.extractors.manifests.ingest import IngestResult
from toolkg.extractors.manifests.reading import Discovered, discover_all
from toolkg.extractors.triples.semantic import SemanticExtractor, make_extractor
from toolkg.extractors.triples.structural import NameIndex
from toolkg.failures import fault_point, quarantine, reason_of
from toolkg.flows.live_precedence import LivePrecedence
from toolkg.flows.stages import (
    CATALOG_STAGES,
    SNAPSHOT,
    CatalogRun,
    Runner,
    in_process,
    make_confirmer,
    manifest_code,
    prefetch_catalog_stages,
    run_catalog_stages,
)
from toolkg.flows.stages.listing import LIST, ListInfo
from toolkg.flows.steps import (
    EXTRACT,
    INGEST,
    LOAD,
    FoundInfo,
    IngestedInfo,
    ManifestOutcome,
    StoreInfo,
    TransformInfo,
    UsageInfo,
    batches,
    tool_batches,
)
from toolkg.models import ExtractedManifest, ManifestFile, QuarantinedItem, StageInfo
from toolkg.ontology import iris
from toolkg.paths import store_cache
from toolkg.stages import Stage, StageContext, StageName
from toolkg.store.build_state import mark_pending, pending_stages
from toolkg.store.catalog_reads import server_ids_by_graph
from toolkg.store.loading import BuildOptions, ManifestParts, record_run
from toolkg.store.oxigraph_store import ManifestRecord, ToolStore
from toolkg.store.snapshots import PreparedSnapshot
from toolkg.store.stats import totals
from toolkg.store.validation import Validator
from toolkg.summary import BuildSummary

DEFAULT_WORKERS = 2  # Dask worker processes of ``--dask local``

# Extraction batches sent elsewhere (a Dask cluster): yields (batch, info) in order.
FanOut = Callable[[list, NameIndex, str], Iterator[tuple[list[IngestResult], TransformInfo]]]


def new_summary(store_dir: str) -> BuildSummary:
    started_at = datetime.now(UTC)
    run_id = started_at.strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]
    return BuildSummary(run_id=run_id, store=str(Path(store_dir).resolve()), started=started_at.isoformat())


def run_pipeline(
    paths: list[str],
    store_dir: str,
    config: BuildConfig | dict | None = None,
    *,
    runner: Runner = in_process,
    fan_out: FanOut | None = None,
    summary: BuildSummary | None = None,
) -> BuildSummary:
    """Build (or incrementally update) the knowledge graph in ``store_dir`` from manifest ``paths``.

    ``config`` (``toolkg.config.BuildConfig``) says which extractor runs (``offline`` rules by default,
    or ``llm``: an OpenAI-compatible endpoint configured by environment or the TOML file
    ``llm_config``), which catalog-wide stages run and with which options, and the input limits.
    The summary is saved under the store's ``runs/`` and returned.
    """
    config = config if isinstance(config, BuildConfig) else BuildConfig.model_validate(config or {})
    summary = summary or new_summary(store_dir)
    if config.dask and fan_out is None:
        raise ConfigError("--dask needs the build flow's Dask task runner (toolkg build --dask)")
    store = ToolStore(store_dir)  # first: a read-only or busy store is one line before anything else opens
    try:
        return _build(store, paths, config, summary, runner, fan_out)
    except Exception as exc:
        full = disk_full_error(exc, store.directory)  # wherever the disk filled up: one line, the run stopped
        if full is None:
            raise
        raise full from exc
    finally:
        store.close()  # Prefect keeps task states (and their tracebacks) alive: release the lock explicitly


def _build(
    store: ToolStore,
    paths: list[str],
    config: BuildConfig,
    summary: BuildSummary,
    runner: Runner,
    fan_out: FanOut | None,
) -> BuildSummary:
    """The run on an opened store. Its summary is saved whatever happens; its snapshot is published only
    after the summary is on disk, so a build that fails anywhere leaves the previous snapshot current."""
    semantic = make_extractor(config.extractor, str(store.directory), config.llm_config)  # fails fast
    if config.dask and semantic.name != "offline":
        semantic.close()
        raise ConfigError("--dask fans out the offline extractor; the LLM extractor is concurrent in-process")
    confirmer = (
        make_confirmer(str(store.directory), config.llm_config) if config.confirm_deps and config.infer else None
    )
    ctx = StageContext(summary)
    ctx.sampler.start()
    clock = time.perf_counter()
    try:
        catalog = CatalogRun(store, ctx, config, confirmer, runner=runner)
        options = BuildOptions.of(config, semantic, manifest_code())
        run = BuildRun(store, config, options, semantic, ctx, catalog, fan_out)
        prepared = _pipeline(run, paths)
    except BaseException as exc:
        _end_run(summary, semantic, confirmer, ctx, clock)
        summary.stopped = _why_stopped(exc, store)
        with contextlib.suppress(Exception):  # the failure that stopped the run is the one to report
            summary.save(store.runs_dir)
        raise
    _end_run(summary, semantic, confirmer, ctx, clock)
    try:
        summary.save(store.runs_dir)
    except BaseException:
        if prepared is not None:
            prepared.discard()
        raise
    if prepared is not None:
        _publish(store, prepared)
    return summary


def _why_stopped(exc: BaseException, store: ToolStore) -> str:
    if not isinstance(exc, Exception):
        return f"interrupted ({type(exc).__name__})"
    return str(disk_full_error(exc, store.directory) or reason_of(exc))


def _end_run(summary: BuildSummary, semantic: SemanticExtractor, confirmer, ctx: StageContext, clock: float) -> None:
    """Release the extractors and complete the summary's figures."""
    summary.fold(UsageInfo(extraction=semantic.usage()))
    semantic.close()
    if confirmer is not None:
        confirmer.close()
    summary.pipeline_seconds = round(time.perf_counter() - clock, 3)
    summary.stage_peak_mb = ctx.sampler.stop()
    summary.ended = datetime.now(UTC).isoformat()


def _publish(store: ToolStore, prepared: PreparedSnapshot) -> None:
    """Make the run's snapshot current. Once it is, the run has succeeded: failing to clear the stage's
    pending mark afterwards (a full disk) only makes the next build publish again."""
    try:
        SNAPSHOT.publish(store, prepared)
    except Exception as exc:
        if not prepared.published:
            prepared.discard()
            raise
        notice(
            f"snapshot {prepared.name} is published, but its pending mark stayed ({reason_of(exc)}): "
            "the next build publishes again"
        )


@dataclass
class BuildRun:
    """What every step of one build shares: the store, the options, the run's context, the
    catalog-wide stages, and what the store held when the run began."""

    store: ToolStore
    config: BuildConfig
    options: BuildOptions
    extractor: SemanticExtractor
    ctx: StageContext
    catalog: CatalogRun
    fan_out: FanOut | None = None
    records: dict[str, ManifestRecord] = field(default_factory=dict)  # manifest path -> its record
    live: LivePrecedence = field(default_factory=LivePrecedence)  # this run's live server ids win over catalogs
    owed: set[str] = field(default_factory=set)  # catalog-wide stages pending from an earlier build
    marked: bool = False

    @property
    def summary(self) -> BuildSummary:
        return self.ctx.summary

    def step(self, stage: Stage, *args):
        """Run one stage's work the way this run runs steps (in-process, or as a Prefect task named after it)."""
        return self.catalog.runner(stage.name, stage.run, *args)

    def before_write(self) -> None:
        """Before the run's first write: the catalog-wide stages are owed until each is redone."""
        if not self.marked:
            stages = [s.name for s in CATALOG_STAGES]
            if self.store.publishes_snapshots:
                stages.append(StageName.SNAPSHOT)
            mark_pending(self.store, stages, self.summary.run_id)
            self.owed.update(stages)
            self.marked = True


def _pipeline(run: BuildRun, paths: list[str]) -> PreparedSnapshot | None:
    """The run's stages; returns its snapshot, prepared but not yet current (or None when none is due)."""
    store, summary = run.store, run.summary
    paths, configurations = _list_live(run, paths)
    with run.ctx.stage(StageName.INGEST, unit="files", show=False):  # finding the files is part of ingesting them
        files = _discover(paths, summary, exclude=configurations, live=bool(summary.live))
    run.records = store.manifest_records()
    run.live = LivePrecedence.of(files, store.directory, run.records)
    files = run.live.ordered(files)
    run.owed = pending_stages(store)
    _drop_orphans(run)
    parsed = _ingest(run, files)
    fault_point("ingest")
    present = set(files)
    absent = [rec for path, rec in run.records.items() if path not in present]  # not under the paths
    gone = absent if run.config.prune else []
    manifests = [r for r in parsed if r.manifest is not None]
    if absent and not gone:  # kept: a typo'd folder or a partial checkout removes nothing unless asked
        ids, defined = server_ids_by_graph(store), {s.id for r in manifests for s in r.parsed.servers}
        summary.fold(
            StoreInfo(kept=tuple(sorted({ids[g] for rec in absent for g in rec.graphs if g in ids} - defined)))
        )
    del parsed
    owners = {g: rec.path for rec in run.records.values() if rec not in gone for g in rec.graphs}
    with run.ctx.stage(StageName.INGEST, show=False):  # the names declared dependencies resolve against
        index = _name_index(run, manifests, owners)
    used = [r.file for r in manifests]
    # the catalog-wide stages' work that can start now (the link stage's embedding of the new texts)
    prefetch_catalog_stages(run.catalog, [t for r in manifests for s in r.parsed.servers for t in s.tools])
    try:
        loaded = _extract_validate_load(run, manifests, index, owners)
        _remove(run, gone)
        fault_point("loaded")
        changed = bool(loaded or summary.removed)
        wrote = run_catalog_stages(run.catalog, changed, run.owed)
    finally:
        run.catalog.finish_prefetch()
    _record(run, used, changed)
    return SNAPSHOT.run(run.catalog, changed or wrote, run.owed)


def _drop_orphans(run: BuildRun) -> None:
    """Graphs an interrupted build wrote in bulk but never recorded: dropped before anything reads them."""
    orphans = run.store.drop_orphans(run.records.values())
    if orphans:
        run.before_write()  # the catalog-wide graphs may have counted them: redo those stages
        run.summary.fold(StoreInfo(orphans_dropped=len(orphans)))


def _list_live(run: BuildRun, paths: list[str]) -> tuple[list[str], set[str]]:
    """List the live MCP servers among ``paths`` (toolkg.live): their snapshots replace them as inputs."""
    with run.ctx.stage(StageName.LIST, unit="servers", show=False):
        try:
            live = LIST.run(
                paths,
                run.store.directory,
                timeout=run.config.live.timeout,
                concurrency=run.config.live.concurrency,
                env_names=run.config.live.env,
                on_listed=lambda done, total: progress.report("list live MCP servers", done, total, "servers"),
            )
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    run.summary.fold(ListInfo.of(live))
    if not live.servers:  # nothing live among the paths: no time to show for a stage that did not run
        run.summary.stage_seconds.pop(StageName.LIST, None)
    return live.paths, live.configurations


def _discover(paths: list[str], summary: BuildSummary, exclude: set[str], live: bool) -> list[str]:
    found = discover_all(paths) if paths else Discovered()
    files = [str(p) for p in found.files if str(p) not in exclude]
    skipped = (QuarantinedItem(source=path, item=path, stage=StageName.READ, reason=why) for path, why in found.skipped)
    summary.fold(StageInfo(quarantined=tuple(skipped)))
    if not files and not live:
        raise NotFoundError(f"no manifest files (.json, .yaml, .yml) under: {' '.join(paths)}")
    summary.fold(FoundInfo(files=len(files)))
    return files


def _ingest(run: BuildRun, files: list[str]) -> list[IngestResult]:
    """Parse the manifests whose fingerprint changed, and the unchanged ones owed a rebuild: a tool
    they name but could not resolve has now appeared, or some of their tools' extraction failed last
    time (the extraction cache makes the rest free)."""
    with run.ctx.stage(StageName.INGEST, unit="manifests", show=False):
        return _ingest_files(run, files)


def _ingest_files(run: BuildRun, files: list[str]) -> list[IngestResult]:
    summary, size = run.summary, run.config.batch_size
    parsed: list[IngestResult] = []
    skipped: list[ManifestFile] = []
    # A catalog owning a live server's id is read again, unchanged or not: its reload gives the id up.
    unread = {path: record for path, record in run.records.items() if path not in run.live.reread}
    for done, batch in enumerate(batches(files, size), start=1):
        info = run.step(INGEST, batch, unread, run.options, run.config.force)
        summary.fold(info)
        parsed += info.parsed
        skipped += info.skipped
        progress.report("ingest", min(done * size, len(files)), len(files))
    new_names = {t.name for r in parsed if r.manifest for s in r.manifest.servers for t in s.tools}
    records = run.records
    waiting = [f.path for f in skipped if set(records[f.path].unresolved) & new_names or records[f.path].pending]
    if waiting:
        again = run.step(INGEST, waiting, {}, run.options, True)
        summary.fold(again)
        parsed += again.parsed
        skipped = [f for f in skipped if f.path not in set(waiting)]
    summary.fold(IngestedInfo(skipped=tuple(f.path for f in skipped), reprocessed=tuple(waiting)))
    for r in parsed:
        summary.fold(r)
    return parsed


def _name_index(run: BuildRun, manifests: list[IngestResult], owners: dict[str, str]) -> NameIndex:
    """Tool names for resolving declared dependencies: this run's tools and the store's others."""
    index = NameIndex()
    replacing = {g for r in manifests if r.file.path in run.records for g in run.records[r.file.path].graphs}
    if manifests:  # resolving names needs every stored tool: skip that scan when nothing is extracted
        for graph, tool_ids in run.store.tools_by_graph().items():
            if graph not in replacing and graph in owners:
                index.add(tool_ids, owners[graph])
    for r in manifests:
        index.add((t.id for s in r.parsed.servers for t in s.tools), r.file.path)
    return index


def _transformed(
    run: BuildRun, work: list[list[IngestResult]], index: NameIndex
) -> Iterator[tuple[list[IngestResult], TransformInfo]]:
    """Each batch with its extraction and validation, in order: on the Dask cluster with --dask
    (each loads here as it comes back), else in this process."""
    if run.fan_out is not None:
        for batch, info in run.fan_out(work, index, run.summary.run_id):
            run.extractor.tools += info.tools  # type: ignore[attr-defined]  # the run's usage line counts them
            yield batch, info
        return
    with Validator(cache_path=store_cache(run.store.directory, "validation")) as validator:
        while work:
            batch = work.pop(0)
            manifests = [r.manifest for r in batch]
            info = run.step(
                EXTRACT,
                manifests,
                index,
                validator,
                run.extractor,
                run.summary.run_id,
                run.ctx,
            )
            yield batch, info


def _extract_validate_load(
    run: BuildRun, manifests: list[IngestResult], index: NameIndex, owners: dict[str, str]
) -> int:
    """Extract, validate and load batch by batch (a batch's models are released once it is loaded);
    returns how many manifests (or parts) loaded."""
    size = run.options.limits.max_tools_per_batch
    total_tools = sum(r.parsed.tool_count for r in manifests)
    if run.config.dask:  # smaller batches, so that every worker gets some (at least four when possible)
        size = max(1, min(size, total_tools // (2 * DEFAULT_WORKERS)))
    work = [list(b) for b in tool_batches(manifests, size)]
    part_count = Counter(r.file.path for batch in work for r in batch)
    manifests.clear()
    loaded = tools_done = 0
    parts: dict[str, ManifestParts] = {}  # manifests loaded in several parts, until their last part
    for batch, info in _transformed(run, work, index):
        run.summary.fold(info)
        for r, extracted in zip(batch, info.extracted, strict=True):
            tools_done += r.parsed.tool_count
            count = part_count.get(r.file.path, 1)
            mine = parts.setdefault(r.file.path, ManifestParts()) if count > 1 else None
            final = mine is None or len(mine.seen) + 1 == count
            if mine is not None:
                mine.seen.append(r.parsed.tool_count)
            if extracted is None:  # quarantined whole (its reason is among the problems)
                if mine is None:
                    continue
                mine.incomplete = True  # earlier parts stay loaded; the record will say the manifest is owed
                if not final or not mine.graphs:
                    continue
                extracted = ExtractedManifest(
                    manifest=r.manifest, graphs=()
                )  # the last part failed: still write the record
            run.before_write()
            if _load(run, r, extracted, owners, mine, final):
                loaded += 1
                fault_point("load")  # after the first manifest's load: the catalog is half new
        del info, batch
        progress.report("extract, validate, load", tools_done, total_tools, "tools")
    return loaded


def _load(
    run: BuildRun,
    r: IngestResult,
    extracted: ExtractedManifest,
    owners: dict[str, str],
    parts: ManifestParts | None,
    final: bool,
) -> bool:
    """Load one manifest (or one part of a big one) through the retrying task; a refusal quarantines
    it. True when loaded."""
    summary = run.summary
    try:
        with run.ctx.stage(StageName.LOAD, show=False):
            previous, run_iri = run.records.get(r.file.path), iris.run_iri(summary.run_id)
            result = run.step(
                LOAD,
                run.store,
                extracted,
                r.file,
                run.options,
                previous,
                owners,
                run_iri,
                parts,
                final,
                run.live.reserved,
            )
    except Exception as exc:  # the store refused this manifest even after retries
        path = r.file.path
        entry = quarantine(exc, source=path, item=path, stage=StageName.LOAD, context="store write failed")
        summary.fold(StageInfo(quarantined=(entry,)))
        if parts is not None:
            parts.incomplete = True
        return False
    if result.quarantined and (note := run.live.refused(r.file.path, [q.item for q in result.quarantined])):
        result = result.model_copy(
            update={"quarantined": tuple(q.model_copy(update={"reason": q.reason + note}) for q in result.quarantined)}
        )
    summary.fold(result)
    if final and r.file.path not in summary.reprocessed:
        previous = run.records.get(r.file.path)
        # bytes read again unchanged (--force, other options) are no change of the manifest's
        outcome = "new" if previous is None else "rebuilt" if previous.sha256 == r.file.sha256 else "changed"
        summary.fold(ManifestOutcome(path=r.file.path, outcome=outcome))
    return True


def _remove(run: BuildRun, gone: Iterable[ManifestRecord]) -> None:
    """With --prune: drop what manifests no longer under the paths defined."""
    for rec in gone:
        with run.ctx.stage(StageName.LOAD, contain=True, item=rec.path, source=rec.path, show=False):
            run.before_write()
            run.store.remove_manifest(rec)
            run.summary.fold(ManifestOutcome(path=rec.path, outcome="removed"))


def _record(run: BuildRun, used: list[ManifestFile], changed: bool) -> None:
    """The run's provenance record (when it changed anything) and the store's totals."""
    summary = run.summary
    with run.ctx.stage(StageName.LOAD, contain=True, show=False):
        if changed:
            ended = datetime.now(UTC)
            started = datetime.fromisoformat(summary.started)
            record_run(run.store, summary.run_id, started, ended, used, summary.removed, run.options)
        summary.fold(StoreInfo(totals=totals(run.store)))
    summary.tools.sort(key=lambda change: (change.tool, change.change))
