"""The pipeline, without Prefect: list -> ingest -> extract -> load -> the catalog-wide stages -> snapshot.

``run_pipeline`` builds (or incrementally updates) the knowledge graph in a store from manifest
paths, running the stages ``toolkg.flows.stages.PIPELINE`` declares (where each stage's code is).
Every stage runs in the run's ``StageContext`` (timing, memory, progress, quarantine: one place,
``toolkg.stages``); per-manifest work goes in batches (flows/build_manifests.py, its stages in
flows/steps.py); the catalog-wide stages run
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
from datetime import UTC, datetime
from pathlib import Path

from toolkg import progress
from toolkg.config import BuildConfig
from toolkg.disk import disk_full_error, notice
from toolkg.errors import ConfigError
from toolkg.extractors.triples.semantic import SemanticExtractor, make_extractor
from toolkg.failures import fault_point, reason_of
from toolkg.flows.build_manifests import (
    BuildRun,
    FanOut,
    discover,
    extract_validate_load,
    ingest,
    name_index,
    remove_manifests,
)
from toolkg.flows.live_precedence import LivePrecedence
from toolkg.flows.stages import (
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
from toolkg.flows.steps import StoreInfo, UsageInfo
from toolkg.models import ManifestFile
from toolkg.stages import StageContext, StageName
from toolkg.store.build_state import pending_stages
from toolkg.store.catalog_reads import server_ids_by_graph
from toolkg.store.loading import BuildOptions, record_run
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.snapshots import PreparedSnapshot
from toolkg.store.stats import totals
from toolkg.summary import BuildSummary


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


def _pipeline(run: BuildRun, paths: list[str]) -> PreparedSnapshot | None:
    """The run's stages; returns its snapshot, prepared but not yet current (or None when none is due)."""
    store, summary = run.store, run.summary
    paths, configurations = _list_live(run, paths)
    with run.ctx.stage(StageName.INGEST, unit="files", show=False):  # finding the files is part of ingesting them
        files = discover(paths, summary, exclude=configurations, live=bool(summary.live))
    run.records = store.manifest_records()
    run.live = LivePrecedence.of(files, store.directory, run.records)
    files = run.live.ordered(files)
    run.owed = pending_stages(store)
    _drop_orphans(run)
    parsed = ingest(run, files)
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
        index = name_index(run, manifests, owners)
    used = [r.file for r in manifests]
    # the catalog-wide stages' work that can start now (the link stage's embedding of the new texts)
    prefetch_catalog_stages(run.catalog, [t for r in manifests for s in r.parsed.servers for t in s.tools])
    try:
        loaded = extract_validate_load(run, manifests, index, owners)
        remove_manifests(run, gone)
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
