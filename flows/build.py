"""The build flow: ingest -> extract (structural + semantic) -> canonicalize -> validate -> load, batched.

The flow body only orchestrates; each stage is a library function (extractors/,
canonicalize/, store/). Work goes to tasks in batches so Prefect's per-task cost stays
small next to the work. Only the load task retries, and only on I/O errors; everything
else that goes wrong with an input is quarantined and the run carries on.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from toolkg import progress
from toolkg.canonicalize import canonicalize_manifest
from toolkg.errors import ConfigError, NotFoundError, ToolkgError
from toolkg.extractors.ingest import IngestResult, ingest_manifest
from toolkg.extractors.manifest_triples import NameIndex, extract_structure
from toolkg.extractors.reading import discover_all, fingerprint_file
from toolkg.extractors.semantic import SemanticExtractor, make_extractor, with_extractions
from toolkg.extractors.triples import ExtractionFailure
from toolkg.failures import fault_point, quarantine
from toolkg.flows.catalog_stages import CatalogStages, make_confirmer, publish_if_due, run_catalog_stages
from toolkg.flows.scale import DEFAULT_WORKERS, fan_out
from toolkg.limits import Limits
from toolkg.models import ExtractedManifest, Manifest, ManifestFile, QuarantinedItem
from toolkg.ontology import iris
from toolkg.store.build_state import CATALOG_STAGES, mark_pending, pending_stages
from toolkg.store.loading import BuildOptions, LoadResult, ManifestParts, fingerprint, load_manifest, record_run
from toolkg.store.oxigraph_store import ManifestRecord, ToolStore
from toolkg.store.stats import totals
from toolkg.store.validation import Validator
from toolkg.summary import BuildSummary

T = TypeVar("T")
BATCH_SIZE = 32  # manifests per ingest task: reading and parsing is cheap next to Prefect's per-task cost


def _batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _tool_batches(results: Sequence[IngestResult], max_tools: int) -> Iterator[Sequence[IngestResult]]:
    """Consecutive manifests holding about ``max_tools`` tools; a bigger manifest is split into parts
    of whole servers (``_parts``), so a batch never holds much more than ``max_tools`` tools."""
    batch: list[IngestResult] = []
    tools = 0
    for whole in results:
        for result in _parts(whole, max_tools):
            if batch and tools + result.manifest.tool_count > max_tools:
                yield batch
                batch, tools = [], 0
            batch.append(result)
            tools += result.manifest.tool_count
    if batch:
        yield batch


def _parts(result: IngestResult, max_tools: int) -> list[IngestResult]:
    """``result`` itself, or for a manifest of more than ``max_tools`` tools, parts holding consecutive
    whole servers of at most ``max_tools`` tools each (a server bigger than that is a part alone)."""
    manifest = result.manifest
    if manifest is None or manifest.tool_count <= max_tools:
        return [result]
    chunks: list[list] = [[]]
    tools = 0
    for server in manifest.servers:
        if chunks[-1] and tools + len(server.tools) > max_tools:
            chunks.append([])
            tools = 0
        chunks[-1].append(server)
        tools += len(server.tools)
    return [
        result.model_copy(update={"manifest": manifest.model_copy(update={"servers": tuple(chunk)})})
        for chunk in chunks
    ]


def _retry_on_io(task, task_run, state) -> bool:
    """Retry only failures that can succeed on a second try (storage I/O, a held lock)."""
    try:
        state.result()
    except OSError:
        return True
    except ToolkgError as exc:
        return exc.transient
    except Exception:
        return False
    return False


def _without_declared(manifest: Manifest) -> Manifest:
    servers = tuple(
        s.model_copy(update={"tools": tuple(t.model_copy(update={"depends_on": ()}) for t in s.tools)})
        for s in manifest.servers
    )
    return manifest.model_copy(update={"servers": servers})


class IngestBatch:
    """Result of one ingest task (a plain class: Prefect does not walk into it)."""

    def __init__(self) -> None:
        self.parsed: list[IngestResult] = []
        self.skipped: list[ManifestFile] = []
        self.quarantined: list[QuarantinedItem] = []


@task(name="ingest", cache_policy=NO_CACHE, persist_result=False)
def ingest_batch(
    paths: Sequence[str], records: dict[str, ManifestRecord], options: BuildOptions, force: bool
) -> IngestBatch:
    """Read and hash each manifest; parse those whose fingerprint changed."""
    out = IngestBatch()
    for path in paths:
        try:
            file, data = fingerprint_file(Path(path), options.limits)
        except Exception as exc:  # unreadable, vanished, over the size limit
            if isinstance(exc, OSError):
                exc = ToolkgError(f"cannot read file: {exc.strerror or exc}")
            out.quarantined.append(quarantine(exc, source=path, item=path, stage="read"))
            continue
        previous = records.get(file.path)
        if not force and previous is not None and previous.fingerprint == fingerprint(file, options):
            out.skipped.append(file)
            continue
        result = ingest_manifest(
            file,
            data,
            format=options.format,
            server=options.server,
            limits=options.limits,  # type: ignore[arg-type]
        )
        if options.hide_declared and result.manifest is not None:
            result = result.model_copy(update={"manifest": _without_declared(result.manifest)})
        out.parsed.append(result)
        del data
    return out


def transform_manifests(
    manifests: Sequence[Manifest], index: NameIndex, validator: Validator, extractor: SemanticExtractor, run_id: str
) -> tuple[list, dict[str, float]]:
    """Structural and semantic extraction, canonicalization and SHACL validation of a batch;
    returns [(extracted or None, problems)] per manifest and the seconds spent per stage.

    A failure is contained where it happens: one tool's extraction is that tool's, one manifest's
    validation that manifest's (``None``, with the reason among its problems)."""
    run = iris.run_iri(run_id)
    timings: Counter[str] = Counter()
    started = time.perf_counter()
    # The whole batch goes to the extractor at once, so the LLM extractor can keep its
    # max_concurrency requests in flight across manifests of a few tools each.
    items = [(tool, server) for m in manifests for server in m.servers for tool in server.tools]
    try:
        results = extractor.extract_many(items, run_id)
    except Exception as exc:  # the extractor itself broke: every tool loads with its structure only
        reason = quarantine(exc, source="", item="batch", stage="extract").reason
        results = [ExtractionFailure(tool_id=tool.id, reason=reason) for tool, _ in items]
    timings["extract-semantic"] += time.perf_counter() - started
    out = []
    offset = 0
    for manifest in manifests:
        stage = "extract"
        try:
            fault_point("transform")  # test hook: one manifest's unexpected failure
            started = time.perf_counter()
            extracted = extract_structure(manifest, index)
            extracted = with_extractions(extracted, results[offset : offset + manifest.tool_count], run)
            timings["extract"] += time.perf_counter() - started
            stage, started = "canonicalize", time.perf_counter()
            extracted = canonicalize_manifest(extracted)
            timings["canonicalize"] += time.perf_counter() - started
            stage, started = "validate", time.perf_counter()
            extracted, rejected = validator.validate(extracted)
            timings["validate"] += time.perf_counter() - started
            out.append((extracted, [*extracted.quarantined, *rejected]))
        except Exception as exc:
            out.append((None, [quarantine(exc, source=manifest.path, item=manifest.path, stage=stage)]))
        offset += manifest.tool_count
    return out, dict(timings)


@task(name="extract-canonicalize-validate", cache_policy=NO_CACHE, persist_result=False)
def transform_batch(
    manifests: Sequence[Manifest],
    index: NameIndex,
    validator: Validator,
    extractor: SemanticExtractor,
    summary: BuildSummary,
):
    out, timings = transform_manifests(manifests, index, validator, extractor, summary.run_id)
    for stage, seconds in timings.items():
        summary.add_time(stage, seconds)
    return out


@task(
    name="load",
    retries=2,
    retry_delay_seconds=1,
    retry_condition_fn=_retry_on_io,
    cache_policy=NO_CACHE,
    persist_result=False,
)
def load_task(
    store: ToolStore,
    extracted,
    file: ManifestFile,
    options: BuildOptions,
    previous: ManifestRecord | None,
    graph_owners: dict[str, str],
    run_id: str,
    parts: ManifestParts | None = None,
    final: bool = True,
) -> LoadResult:
    return load_manifest(
        store, extracted, file, options, previous, graph_owners, iris.run_iri(run_id), parts=parts, final=final
    )


@flow(name="toolkg-build", log_prints=True, validate_parameters=False)
def build_catalog(
    paths: list[str],
    store_dir: str,
    format: str | None = None,
    server: str | None = None,
    prune: bool = False,
    force: bool = False,
    batch_size: int = BATCH_SIZE,
    extractor: str = "offline",
    llm_config: str | None = None,
    infer: bool = True,
    hide_declared: bool = False,
    links: bool = True,
    confirm_deps: bool = False,
    dask: bool = False,
    limits: dict[str, int] | None = None,
) -> BuildSummary:
    """Build (or incrementally update) the knowledge graph in ``store_dir`` from manifest ``paths``.

    ``extractor`` is ``offline`` (rules, the default) or ``llm`` (an OpenAI-compatible
    endpoint configured by environment or the TOML file ``llm_config``; secrets never
    travel as flow parameters). ``infer`` infers dependencies across the catalog, reviewed by
    that LLM when ``confirm_deps``; ``links`` adds the structural links (embeddings offline).
    ``limits`` overrides the input limits by name (``toolkg.limits.Limits``).
    """
    started_at = datetime.now(UTC)
    run_id = started_at.strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]
    summary = BuildSummary(run_id=run_id, store=str(Path(store_dir).resolve()), started=started_at.isoformat())
    semantic = make_extractor(extractor, store_dir, llm_config)  # fails fast on a missing LLM endpoint
    confirmer = make_confirmer(store_dir, llm_config) if confirm_deps and infer else None
    options = BuildOptions(
        format=format,
        server=server,
        extractor=semantic.name,
        extractor_version=semantic.key(),
        hide_declared=hide_declared,
        limits=Limits(**(limits or {})),
    )
    store = ToolStore(store_dir)
    clock = time.perf_counter()
    try:
        if dask and semantic.name != "offline":
            raise ConfigError("--dask fans out the offline extractor; the LLM extractor is concurrent in-process")
        stages = CatalogStages(infer=infer, links=links, confirmer=confirmer, dask=dask)
        _run(store, paths, options, semantic, prune, force, batch_size, summary, stages)
    finally:
        summary.extraction = semantic.usage()
        semantic.close()
        if confirmer is not None:
            confirmer.close()
        summary.pipeline_seconds = round(time.perf_counter() - clock, 3)
        summary.ended = datetime.now(UTC).isoformat()
        summary.save(store.runs_dir)
        create_markdown_artifact(
            key="toolkg-build-summary", markdown=summary.to_markdown(), description=f"toolkg build {run_id}"
        )
        store.close()  # Prefect keeps task states (and their tracebacks) alive: release the lock explicitly
    return summary


def _load(
    store: ToolStore,
    r: IngestResult,
    extracted,
    options: BuildOptions,
    records: dict[str, ManifestRecord],
    owners: dict[str, str],
    summary: BuildSummary,
    parts: ManifestParts | None = None,
    final: bool = True,
) -> bool:
    """Load one manifest (or one part of a big one) through the retrying task; a refusal quarantines
    it. True when loaded."""
    clock = time.perf_counter()
    try:
        result = load_task(
            quote(store),
            quote(extracted),
            r.file,
            options,
            records.get(r.file.path),
            quote(owners),
            summary.run_id,
            quote(parts),
            final,
        )
    except Exception as exc:  # the store refused this manifest even after retries
        entry = quarantine(exc, source=r.file.path, item=r.file.path, stage="load", context="store write failed")
        summary.quarantined.append(entry)
        if parts is not None:
            parts.incomplete = True
        return False
    finally:
        summary.add_time("load", time.perf_counter() - clock)
    summary.quarantined += result.quarantined
    summary.loaded_servers += result.servers
    summary.loaded_tools += result.tools
    summary.loaded_triples += result.triples
    if final and r.file.path not in summary.reprocessed:
        (summary.changed if r.file.path in records else summary.new).append(r.file.path)
    return True


def _empty(manifest: Manifest):
    """A part that loads nothing: lets the last part of a manifest write its record."""
    return ExtractedManifest(manifest=manifest, graphs=())


def _in_process(batches: list, index: NameIndex, extractor: SemanticExtractor, summary: BuildSummary):
    with Validator() as validator:
        while batches:
            batch = batches.pop(0)
            yield (
                batch,
                transform_batch(
                    quote([r.manifest for r in batch]), quote(index), quote(validator), quote(extractor), quote(summary)
                ),
            )


def _run(
    store: ToolStore,
    paths: list[str],
    options: BuildOptions,
    extractor: SemanticExtractor,
    prune: bool,
    force: bool,
    batch_size: int,
    summary: BuildSummary,
    stages: CatalogStages,
) -> None:
    clock = time.perf_counter()
    found = discover_all(paths)
    files = [str(p) for p in found.files]
    for path, why in found.skipped:
        summary.quarantined.append(QuarantinedItem(source=path, item=path, stage="read", reason=why))
    if not files:
        raise NotFoundError(f"no manifest files (.json, .yaml, .yml) under: {' '.join(paths)}")
    summary.manifests_seen = len(files)
    records = store.manifest_records()
    owed = pending_stages(store)  # catalog-wide stages an earlier build did not finish

    parsed: list[IngestResult] = []
    skipped: list[ManifestFile] = []
    for done, batch in enumerate(_batches(files, batch_size), start=1):
        result = ingest_batch(batch, quote(records), options, force)
        parsed += result.parsed
        skipped += result.skipped
        summary.quarantined += result.quarantined
        progress.report("ingest", min(done * batch_size, len(files)), len(files))
    # An unchanged manifest is rebuilt when a tool it names but could not resolve has now appeared,
    # or when some of its tools' extraction failed last time (the cache makes the rest free).
    new_names = {t.name for r in parsed if r.manifest for s in r.manifest.servers for t in s.tools}
    waiting = [f.path for f in skipped if set(records[f.path].unresolved) & new_names or records[f.path].pending]
    if waiting:
        again = ingest_batch(waiting, {}, options, True)
        parsed += again.parsed
        summary.quarantined += again.quarantined
        summary.reprocessed = waiting
        skipped = [f for f in skipped if f.path not in set(waiting)]
    summary.skipped = [f.path for f in skipped]
    for r in parsed:
        summary.quarantined += r.quarantined
        summary.notices += r.notices
    summary.add_time("ingest", time.perf_counter() - clock)
    fault_point("ingest")

    present = set(files)
    gone = [rec for path, rec in records.items() if path not in present] if prune else []
    manifests = [r for r in parsed if r.manifest is not None]
    replacing = {g for r in manifests if r.file.path in records for g in records[r.file.path].graphs}
    owners = {g: rec.path for rec in records.values() if rec not in gone for g in rec.graphs}
    index = NameIndex()
    if manifests:  # resolving names needs every stored tool: skip that scan when nothing is extracted
        for graph, tool_ids in store.tools_by_graph().items():
            if graph not in replacing and graph in owners:
                index.add(tool_ids, owners[graph])
    for r in manifests:
        index.add((t.id for s in r.manifest.servers for t in s.tools), r.file.path)
    marked = False

    def before_write() -> None:
        """Before the run's first write: the catalog-wide stages are owed until each is redone."""
        nonlocal marked
        if not marked:
            stages_owed = [s for s in CATALOG_STAGES if not (s == "snapshot" and store.remote)]
            mark_pending(store, stages_owed, summary.run_id)
            owed.update(stages_owed)
            marked = True

    loaded = 0
    used = [r.file for r in manifests]
    size = options.limits.max_tools_per_batch
    if stages.dask:  # smaller batches, so that every worker gets some (at least four batches when possible)
        size = max(1, min(size, sum(r.manifest.tool_count for r in manifests) // (2 * DEFAULT_WORKERS)))
    total_tools = sum(r.manifest.tool_count for r in manifests)
    batches = list(_tool_batches(manifests, size))
    part_count = Counter(r.file.path for batch in batches for r in batch)
    del parsed, manifests  # from here each batch's models are released once it is loaded
    if stages.dask:  # batches fan out over the Dask cluster; each loads here as it comes back
        transformed_batches = fan_out(batches, index, summary, extractor)
    else:
        transformed_batches = _in_process(batches, index, extractor, summary)
    tools_done = 0
    parts: dict[str, ManifestParts] = {}  # manifests loaded in several parts, until their last part
    for batch, transformed in transformed_batches:
        for r, (extracted, problems) in zip(batch, transformed, strict=True):
            summary.quarantined += problems
            tools_done += r.manifest.tool_count
            count = part_count.get(r.file.path, 1)
            mine = parts.setdefault(r.file.path, ManifestParts()) if count > 1 else None
            final = mine is None or len(mine.seen) + 1 == count
            if mine is not None:
                mine.seen.append(r.manifest.tool_count)
            if extracted is None:  # quarantined whole (its reason is among the problems)
                if mine is None:
                    continue
                mine.incomplete = True  # earlier parts stay loaded; the record will say the manifest is owed
                if not final or not mine.graphs:
                    continue
                extracted = _empty(r.manifest)  # the last part failed: still write the record
            before_write()
            if _load(store, r, extracted, options, records, owners, summary, mine, final):
                loaded += 1
                fault_point("load")  # after the first manifest's load: the catalog is half new
        del transformed, batch
        progress.report("extract, validate, load", tools_done, total_tools, "tools")

    clock = time.perf_counter()
    for rec in gone:
        try:
            before_write()
            store.remove_manifest(rec)
            summary.removed.append(rec.path)
        except Exception as exc:
            summary.quarantined.append(quarantine(exc, source=rec.path, item=rec.path, stage="load"))
    summary.add_time("load", time.perf_counter() - clock)
    fault_point("loaded")
    changed = bool(loaded or summary.removed)
    wrote = run_catalog_stages(store, summary, stages, changed, owed)
    clock = time.perf_counter()
    try:
        if changed:
            record_run(
                store,
                summary.run_id,
                datetime.fromisoformat(summary.started),
                datetime.now(UTC),
                used,
                summary.removed,
                options,
            )
        summary.totals = totals(store)
    except Exception as exc:
        summary.quarantined.append(quarantine(exc, source=summary.store, item="catalog", stage="load"))
    summary.add_time("load", time.perf_counter() - clock)
    publish_if_due(store, summary, changed or wrote, owed)
