"""The per-manifest steps of the pipeline: ingest (read), transform (extract, extract-semantic, validate), load.

Each is a stage object (``toolkg.stages.Stage``: ``INGEST``, ``READ``, ``EXTRACT``, ...; declared in
order with the others in ``toolkg.flows.stages.PIPELINE``) whose ``run`` is a plain function, no
Prefect: the pipeline (flows/pipeline.py) runs them in-process, and the build flow (flows/build.py)
runs the same functions as Prefect tasks. Each returns a typed result
(``toolkg.models.StageInfo``) that the pipeline folds into the run summary; no step writes shared
state. Work goes to steps in batches so a task's cost stays small next to the work. Only loading
retries, and only on I/O errors; everything else that goes wrong with an input is quarantined and
the run carries on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from pyoxigraph import NamedNode

from toolkg.disk import is_disk_full
from toolkg.errors import ToolkgError
from toolkg.extractors.manifests.ingest import IngestResult, ingest_manifest
from toolkg.extractors.manifests.reading import fingerprint_file
from toolkg.extractors.triples.models import ExtractionFailure, ToolExtraction
from toolkg.extractors.triples.semantic import SemanticExtractor, with_extractions
from toolkg.extractors.triples.structural import NameIndex, extract_structure
from toolkg.failures import fault_point, quarantine
from toolkg.models import ExtractedManifest, Manifest, ManifestFile, QuarantinedItem, Server, StageInfo, Tool
from toolkg.ontology import iris
from toolkg.stages import StageBase, StageName, Stopwatch, Timer
from toolkg.store.loading import BuildOptions, LoadResult, ManifestParts, fingerprint, load_manifest
from toolkg.store.oxigraph_store import ManifestRecord, ToolStore
from toolkg.store.validation import Validator
from toolkg.usage import ExtractionUsage

T = TypeVar("T")


class IngestInfo(StageInfo):
    """One ingest batch: manifests parsed (each with its own quarantine and notices), files unchanged."""

    parsed: tuple[IngestResult, ...] = ()
    skipped: tuple[ManifestFile, ...] = ()


class TransformInfo(StageInfo):
    """One transform batch: per manifest, its extracted triples (None when quarantined whole) and the
    problems found (its reasons are in ``quarantined``, in the same order)."""

    extracted: tuple[ExtractedManifest | None, ...] = ()
    problems: tuple[tuple[QuarantinedItem, ...], ...] = ()
    tools: int = 0
    worker: str = ""  # host:pid of the Dask worker that ran it ('' in the flow's process)

    def summary_fields(self) -> dict[str, Any]:
        return {"workers": [self.worker]} if self.worker else {}


class UsageInfo(StageInfo):
    """The semantic extractor's usage over the run (extractor, model, prompt, requests, tokens, cost), taken
    when the run ends: what the summary's ``extraction`` says."""

    extraction: ExtractionUsage

    def summary_fields(self) -> dict[str, Any]:
        return {"extraction": self.extraction}


class FoundInfo(StageInfo):
    """The manifest files found under the paths (``manifests_seen``); the files skipped are quarantined."""

    files: int = 0

    def summary_fields(self) -> dict[str, Any]:
        return {"manifests_seen": self.files}


class IngestedInfo(StageInfo):
    """What ingest decided over all its batches: the files unchanged (skipped) and those read again unchanged
    because a missing dependency target appeared or their record is owed a rebuild (reprocessed)."""

    skipped: tuple[str, ...] = ()
    reprocessed: tuple[str, ...] = ()

    def summary_fields(self) -> dict[str, Any]:
        return {"skipped": list(self.skipped), "reprocessed": list(self.reprocessed)}


class ManifestOutcome(StageInfo):
    """One manifest the run loaded (new, changed, or rebuilt: bytes unchanged) or removed (``--prune``)."""

    path: str
    outcome: Literal["new", "changed", "rebuilt", "removed"]

    def summary_fields(self) -> dict[str, Any]:
        return {self.outcome: [self.path]}


class StoreInfo(StageInfo):
    """What the run found in, and left, the store as a whole: graphs an interrupted build left without their
    record (dropped), servers no path defines any more (kept without --prune), the totals after the run."""

    orphans_dropped: int = 0
    kept: tuple[str, ...] = ()
    totals: dict[str, int] = {}

    def summary_fields(self) -> dict[str, Any]:
        fields = {"orphans_dropped": self.orphans_dropped, "kept": list(self.kept), "totals": self.totals}
        return {name: value for name, value in fields.items() if value}


def batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def tool_batches(results: Sequence[IngestResult], max_tools: int) -> Iterator[Sequence[IngestResult]]:
    """Consecutive manifests holding about ``max_tools`` tools; a bigger manifest is split into parts
    of whole servers (``parts``), so a batch never holds much more than ``max_tools`` tools."""
    batch: list[IngestResult] = []
    tools = 0
    for whole in results:
        for result in parts(whole, max_tools):
            if batch and tools + result.parsed.tool_count > max_tools:
                yield batch
                batch, tools = [], 0
            batch.append(result)
            tools += result.parsed.tool_count
    if batch:
        yield batch


def parts(result: IngestResult, max_tools: int) -> list[IngestResult]:
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


def transient(exc: BaseException) -> bool:
    """Failures that can succeed on a second try (storage I/O, a held lock; not a full disk)."""
    if isinstance(exc, OSError):
        return not is_disk_full(exc)
    return isinstance(exc, ToolkgError) and exc.transient


def retrying(work: Callable[[], T], attempts: int = 3, delay: float = 1.0) -> T:
    """``work()``, tried again (up to ``attempts`` in all, ``delay`` seconds apart) on a transient failure."""
    for attempt in range(1, attempts + 1):
        try:
            return work()
        except Exception as exc:
            if attempt == attempts or not transient(exc):
                raise
            time.sleep(delay)
    raise AssertionError("unreachable")


def _without_declared(manifest: Manifest) -> Manifest:
    servers = tuple(
        s.model_copy(update={"tools": tuple(t.model_copy(update={"depends_on": ()}) for t in s.tools)})
        for s in manifest.servers
    )
    return manifest.model_copy(update={"servers": servers})


def ingest_batch(
    paths: Sequence[str], records: dict[str, ManifestRecord], options: BuildOptions, force: bool
) -> IngestInfo:
    """Read and hash each manifest; parse those whose fingerprint changed."""
    parsed: list[IngestResult] = []
    skipped: list[ManifestFile] = []
    quarantined: list[QuarantinedItem] = []
    for path in paths:
        try:
            file, data = READ.run(Path(path), options.limits)
        except Exception as exc:  # unreadable, vanished, over the size limit
            if isinstance(exc, OSError):
                exc = ToolkgError(f"cannot read file: {exc.strerror or exc}")
            quarantined.append(quarantine(exc, source=path, item=path, stage=StageName.READ))
            continue
        previous = records.get(file.path)
        if not force and previous is not None and previous.fingerprint == fingerprint(file, options):
            skipped.append(file)
            continue
        result = ingest_manifest(file, data, format=options.format, server=options.server, limits=options.limits)
        if options.hide_declared and result.manifest is not None:
            result = result.model_copy(update={"manifest": _without_declared(result.manifest)})
        parsed.append(result)
        del data
    return IngestInfo(parsed=tuple(parsed), skipped=tuple(skipped), quarantined=tuple(quarantined))


def transform_manifests(
    manifests: Sequence[Manifest],
    index: NameIndex,
    validator: Validator,
    extractor: SemanticExtractor,
    run_id: str,
    timer: Timer | None = None,
    *,
    extract_only: set[str] | None = None,
    validate_only: Callable[[ExtractedManifest], set[str]] | None = None,
) -> TransformInfo:
    """Structural and semantic extraction and SHACL validation of a batch.

    A failure is contained where it happens: one tool's extraction is that tool's, one manifest's
    validation that manifest's (``None``, with the reason among its problems). ``timer`` is the run's
    ``StageContext`` in the pipeline's process; elsewhere (a Dask worker) the seconds per stage come
    back in the info.

    Incremental sync narrows the work to what a change implies: ``extract_only`` (tool ids) runs the
    semantic extractor on those tools alone (the others get no extraction graph), and
    ``validate_only`` says, from a manifest's structural triples, which tools SHACL checks (with the
    server's own triples)."""
    run = iris.run_iri(run_id)
    watch = timer or Stopwatch()
    # The whole batch goes to the extractor at once, so the LLM extractor can keep its
    # max_concurrency requests in flight across manifests of a few tools each.
    every = [(tool, server) for m in manifests for server in m.servers for tool in server.tools]
    items = every if extract_only is None else [(t, s) for t, s in every if t.id in extract_only]
    try:
        with watch.stage(StageName.EXTRACT_SEMANTIC, show=False):
            found = EXTRACT_SEMANTIC.run(extractor, items, run_id)
    except Exception as exc:  # the extractor itself broke: every tool loads with its structure only
        reason = quarantine(exc, source="", item="batch", stage=StageName.EXTRACT).reason
        found = [ExtractionFailure(tool_id=tool.id, reason=reason) for tool, _ in items]
    results: list[ToolExtraction | ExtractionFailure | None] = list(found)
    if extract_only is not None:  # back in manifest order, None where a tool was not extracted this time
        chosen = iter(found)
        results = [next(chosen) if tool.id in extract_only else None for tool, _ in every]
    extracted: list[ExtractedManifest | None] = []
    problems: list[tuple[QuarantinedItem, ...]] = []
    offset = 0
    for manifest in manifests:
        stage = StageName.EXTRACT
        try:
            fault_point("transform")  # test hook: one manifest's unexpected failure
            with watch.stage(stage, show=False):
                one = extract_structure(manifest, index)
                one = with_extractions(one, results[offset : offset + manifest.tool_count], run)
            stage = StageName.VALIDATE
            with watch.stage(stage, show=False):
                one, rejected = VALIDATE.run(validator, one, validate_only(one) if validate_only else None)
            extracted.append(one)
            problems.append((*one.quarantined, *rejected))
        except Exception as exc:
            extracted.append(None)
            problems.append((quarantine(exc, source=manifest.path, item=manifest.path, stage=stage),))
        offset += manifest.tool_count
    return TransformInfo(
        seconds=dict(watch.seconds) if isinstance(watch, Stopwatch) else {},
        extracted=tuple(extracted),
        problems=tuple(problems),
        quarantined=tuple(q for found in problems for q in found),
        tools=len(items),
    )


def extract_semantic(
    extractor: SemanticExtractor, items: Sequence[tuple[Tool, Server]], run_id: str
) -> list[ToolExtraction | ExtractionFailure]:
    """The semantic extractor over a batch's (tool, server) pairs: one result per pair, in order."""
    return extractor.extract_many(items, run_id)


def validate(
    validator: Validator, extracted: ExtractedManifest, only: set[str] | None
) -> tuple[ExtractedManifest, list[QuarantinedItem]]:
    """SHACL over one manifest's graphs (``only``: those tools' alone): what passes, and what was rejected."""
    return validator.validate(extracted, only)


def load(
    store: ToolStore,
    extracted: ExtractedManifest,
    file: ManifestFile,
    options: BuildOptions,
    previous: ManifestRecord | None,
    owners: dict[str, str],
    run_iri: NamedNode,
    parts: ManifestParts | None,
    final: bool,
    reserved: Mapping[str, str] | None,
) -> LoadResult:
    """One manifest (or part) in one transaction, tried again on a transient failure (``retrying``)."""
    return retrying(
        lambda: load_manifest(
            store, extracted, file, options, previous, owners, run_iri, parts=parts, final=final, reserved=reserved
        )
    )


# --- the stage objects (toolkg.stages.Stage); PIPELINE (flows/stages/__init__.py) declares them in order ----


class ManifestStage(StageBase):
    """A stage that makes a manifest's graphs: its code's fingerprint is part of every manifest's fingerprint
    (``BuildOptions.code``), so new code in one of them rebuilds the manifests, and code elsewhere does not."""


class Read(ManifestStage):
    """A manifest file hashed and decoded, within the input limits (timed as part of ingest)."""

    name = StageName.READ
    section = "limits"
    part_of = StageName.INGEST
    code = ("toolkg.extractors.manifests.reading",)
    run = staticmethod(fingerprint_file)


class Ingest(ManifestStage):
    """A batch of manifest paths read (``Read``) and those whose fingerprint changed parsed into models."""

    name = StageName.INGEST
    section = "build"  # format, server, hide_declared, force, batch_size
    code = ("toolkg.extractors.manifests",)
    run = staticmethod(ingest_batch)


class Extract(ManifestStage):
    """A batch's structural triples, with the semantic extractor's results, validated: ``TransformInfo``."""

    name = StageName.EXTRACT
    section = "build"  # extractor, llm_config
    code = ("toolkg.extractors.triples",)
    run = staticmethod(transform_manifests)


class ExtractSemantic(ManifestStage):
    """The triple extractor itself (offline rules or an LLM), over a whole batch at once (part of extract)."""

    name = StageName.EXTRACT_SEMANTIC
    section = "build"  # extractor, llm_config
    part_of = StageName.EXTRACT
    code = ("toolkg.extractors.triples", "toolkg.prompts")
    run = staticmethod(extract_semantic)


class Validate(ManifestStage):
    """SHACL over each manifest's graphs (part of the extract step's batch)."""

    name = StageName.VALIDATE
    part_of = StageName.EXTRACT
    code = ("toolkg.store.validation", "toolkg.ontology")
    run = staticmethod(validate)


class Load(ManifestStage):
    """One manifest (or part) written in one transaction, retried on transient failures: ``LoadResult``."""

    name = StageName.LOAD
    code = ("toolkg.store.loading",)
    run = staticmethod(load)


READ, INGEST, EXTRACT, EXTRACT_SEMANTIC = Read(), Ingest(), Extract(), ExtractSemantic()
VALIDATE, LOAD = Validate(), Load()
