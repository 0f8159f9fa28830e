"""Every stage of the pipeline, declared once and in order: ``PIPELINE``. Start here to find a stage's code.

``PIPELINE`` holds one stage object per ``StageName`` (``toolkg.stages.Stage``: its name, the ``BuildConfig``
section of its options, its code's fingerprint, ``run`` -> a typed result, and ``update`` for a stage that
follows incremental sync). Listing and the snapshot are modules here; the per-manifest steps are
flows/steps.py; the catalog-wide stages, one module each here, are ``CATALOG_STAGES``, the part of
``PIPELINE`` after loading; the per-manifest ones are ``MANIFEST_STAGES``, whose code fingerprints are part
of every manifest's fingerprint (``manifest_code``). flows/pipeline.py runs them (a build), flows/sync/ the
catalog-wide ones' ``update`` (a sync).

Each stage is one class (``base.CatalogStage``) in its own module that states, once: its name, the
graph it writes, its options (a section of ``BuildConfig``), the modules whose code decides its
result, ``run(run) -> info``, how that info prints (the info's ``lines``) and, for incremental sync,
how it follows a change to a few tools (``warm``, ``update``, ``after_write``; by default it is marked
pending for the next build). Adding a stage is its module, a line in ``PIPELINE`` and its ``StageName``.

Each stage reads the whole stored catalog and swaps one named graph, under one guard
(``StageContext.stage`` with ``contain``): a failure keeps the stage's previous graph, becomes a
quarantine entry for the catalog (stage and one-line reason), and leaves the stage marked pending
(``store/build_state.py``), so the next build redoes it even when no manifest changed. A stage clears
its mark only after its graph is in, with the digest of its options and code: other options or newer
rules make it due again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolkg.failures import fault_point
from toolkg.flows.stages.audit import Audit
from toolkg.flows.stages.base import CatalogRun, CatalogStage, Runner, in_process
from toolkg.flows.stages.canonicalize import Canonicalize
from toolkg.flows.stages.infer import CONFIRM, Infer
from toolkg.flows.stages.link import Link
from toolkg.flows.stages.listing import LIST
from toolkg.flows.stages.retrieval_index import RetrievalIndex
from toolkg.flows.stages.snapshot import SNAPSHOT
from toolkg.flows.steps import EXTRACT, EXTRACT_SEMANTIC, INGEST, LOAD, READ, VALIDATE, ManifestStage
from toolkg.models import Tool
from toolkg.paths import store_cache
from toolkg.stages import Stage
from toolkg.store.build_state import clear_pending, options_digests

if TYPE_CHECKING:
    from toolkg.canonicalize.inference.confirm import DependencyConfirmer

__all__ = [
    "CATALOG_STAGES",
    "MANIFEST_STAGES",
    "PIPELINE",
    "SNAPSHOT",
    "CatalogRun",
    "CatalogStage",
    "Runner",
    "in_process",
    "manifest_code",
    "prefetch_catalog_stages",
    "run_catalog_stages",
]

# The pipeline, in order: StageName -> the stage object -> the module holding its code.
PIPELINE: tuple[Stage, ...] = (
    LIST,  # list: live MCP servers listed into snapshots -- flows/stages/listing.py (toolkg.live)
    READ,  # read: a manifest hashed and decoded, part of ingest -- flows/steps.py (extractors/manifests/reading.py)
    INGEST,  # ingest: manifests parsed into models -- flows/steps.py (extractors/manifests/)
    EXTRACT,  # extract: structural triples and the semantic ones, validated -- flows/steps.py (extractors/triples/)
    EXTRACT_SEMANTIC,  # extract-semantic: the triple extractor, part of extract -- flows/steps.py (extractors/triples/)
    VALIDATE,  # validate: SHACL per manifest, part of extract -- flows/steps.py (store/validation.py)
    LOAD,  # load: one transaction per manifest -- flows/steps.py (store/loading.py)
    Canonicalize(),  # canonicalize: entity clusters -- flows/stages/canonicalize.py (canonicalize/entities/)
    Infer(),  # infer: dependency edges -- flows/stages/infer.py (canonicalize/inference/)
    CONFIRM,  # confirm: an LLM's review of them, part of infer -- flows/stages/infer.py (canonicalize/inference/)
    Link(),  # link: structural links, embeddings -- flows/stages/link.py (canonicalize/links/, embeddings/)
    Audit(),  # audit: findings, toxic flows -- flows/stages/audit.py (canonicalize/findings/)
    RetrievalIndex(),  # index: the retrieval index -- flows/stages/retrieval_index.py (toolkg.retrieval)
    SNAPSHOT,  # snapshot: the read-only copy the endpoint serves -- flows/stages/snapshot.py (store/snapshots.py)
)
# The catalog-wide stages, for builds (run_catalog_stages) and syncs (flows/sync/catalog.py) alike.
CATALOG_STAGES: tuple[CatalogStage, ...] = tuple(s for s in PIPELINE if isinstance(s, CatalogStage))
# The stages that make a manifest's graphs: their code is part of each manifest's fingerprint (manifest_code).
MANIFEST_STAGES: tuple[ManifestStage, ...] = tuple(s for s in PIPELINE if isinstance(s, ManifestStage))


def manifest_code() -> dict[str, str]:
    """The fingerprint of each per-manifest stage's code, by stage (``BuildOptions.code``): a manifest whose
    record has other fingerprints is rebuilt, as one read with other options is."""
    return {stage.name: stage.fingerprint() for stage in MANIFEST_STAGES}


def prefetch_catalog_stages(run: CatalogRun, tools: Sequence[Tool]) -> None:
    """Start each wanted stage's prefetch (``CatalogStage.prefetch``) on the ``tools`` this run (re)loads."""
    for stage in CATALOG_STAGES:
        if stage.wanted(run) and (work := stage.prefetch(run, tools)) is not None:
            run.prefetched[stage.name] = work


def run_catalog_stages(run: CatalogRun, changed: bool, pending: set[str]) -> bool:
    """Each catalog-wide stage that is due, in order (a stage switched off leaves no stale graph
    behind: "declared edges only" means that); returns whether any graph was rewritten."""
    store = run.store
    digests = options_digests(store)
    wrote = False
    for stage in CATALOG_STAGES:
        if not stage.wanted(run):
            if stage.graph is not None and (store.has_graph(stage.graph) or stage.name in pending):
                with run.ctx.stage(stage.name, contain=True):
                    store.drop_graph(stage.graph)
                    clear_pending(store, stage.name)
                wrote = True
        elif stage.due(run, changed, pending, digests):
            wrote |= run_stage(run, stage)
    return wrote


def run_stage(run: CatalogRun, stage: CatalogStage) -> bool:
    """One stage under the run's guard; its pending mark is cleared last. True when it succeeded."""
    with run.ctx.stage(stage.name, unit=stage.unit, contain=True) as handle:
        fault_point(f"before-{stage.name}")  # test hook: a failure here keeps the stage's previous graph
        info = run.runner(stage.name, stage.run, run)
        run.ctx.summary.fold(info)
        count = stage.size(run, info)
        if count is not None:
            handle.report(count, count)
        fault_point(stage.name)  # test hook: a kill here leaves the stage marked, so the next build redoes it
        clear_pending(run.store, stage.name, stage.digest(run))
    return handle.ok


def make_confirmer(store_dir: str, llm_config: str | None) -> DependencyConfirmer:
    from toolkg.canonicalize.inference.confirm import DependencyConfirmer  # openai + instructor load only when used
    from toolkg.llm.config import load_llm_config

    config = load_llm_config(llm_config)
    config.require_endpoint()
    return DependencyConfirmer(config, store_cache(store_dir, "llm"))
