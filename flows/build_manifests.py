"""A build's per-manifest work: the manifests found, the changed ones parsed, then extracted, validated and
loaded batch by batch (one transaction per manifest), and those gone removed (--prune).

``BuildRun`` is what every step of one build shares; flows/pipeline.py runs the build around these steps
(listing first; the catalog-wide stages, the run's record and its snapshot after). Each step's work is
a stage of ``PIPELINE`` (flows/steps.py), run through the build's ``runner``; the batches' extraction goes
to a Dask cluster when the run has a ``fan_out``. No Prefect here either (tests/unit/test_layering.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from toolkg import progress
from toolkg.config import BuildConfig
from toolkg.errors import NotFoundError
from toolkg.extractors.manifests.ingest import IngestResult
from toolkg.extractors.manifests.reading import Discovered, discover_all
from toolkg.extractors.triples.semantic import SemanticExtractor
from toolkg.extractors.triples.structural import NameIndex
from toolkg.failures import fault_point, quarantine
from toolkg.flows.live_precedence import LivePrecedence
from toolkg.flows.stages import CATALOG_STAGES, CatalogRun
from toolkg.flows.steps import (
    EXTRACT,
    INGEST,
    LOAD,
    FoundInfo,
    IngestedInfo,
    ManifestOutcome,
    TransformInfo,
    batches,
    tool_batches,
)
from toolkg.models import ExtractedManifest, ManifestFile, QuarantinedItem, StageInfo
from toolkg.ontology import iris
from toolkg.paths import store_cache
from toolkg.stages import Stage, StageContext, StageName
from toolkg.store.build_state import mark_pending
from toolkg.store.loading import BuildOptions, ManifestParts
from toolkg.store.oxigraph_store import ManifestRecord, ToolStore
from toolkg.store.validation import Validator
from toolkg.summary import BuildSummary

DEFAULT_WORKERS = 2  # Dask worker processes of ``--dask local``

# Extraction batches sent elsewhere (a Dask cluster): yields (batch, info) in order.
FanOut = Callable[[list, NameIndex, str], Iterator[tuple[list[IngestResult], TransformInfo]]]


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


def discover(paths: list[str], summary: BuildSummary, exclude: set[str], live: bool) -> list[str]:
    found = discover_all(paths) if paths else Discovered()
    files = [str(p) for p in found.files if str(p) not in exclude]
    skipped = (QuarantinedItem(source=path, item=path, stage=StageName.READ, reason=why) for path, why in found.skipped)
    summary.fold(StageInfo(quarantined=tuple(skipped)))
    if not files and not live:
        raise NotFoundError(f"no manifest files (.json, .yaml, .yml) under: {' '.join(paths)}")
    summary.fold(FoundInfo(files=len(files)))
    return files


def ingest(run: BuildRun, files: list[str]) -> list[IngestResult]:
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


def name_index(run: BuildRun, manifests: list[IngestResult], owners: dict[str, str]) -> NameIndex:
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


def extract_validate_load(
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


def remove_manifests(run: BuildRun, gone: Iterable[ManifestRecord]) -> None:
    """With --prune: drop what manifests no longer under the paths defined."""
    for rec in gone:
        with run.ctx.stage(StageName.LOAD, contain=True, item=rec.path, source=rec.path, show=False):
            run.before_write()
            run.store.remove_manifest(rec)
            run.summary.fold(ManifestOutcome(path=rec.path, outcome="removed"))
