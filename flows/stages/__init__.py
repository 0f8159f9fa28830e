"""The catalog-wide stages after loading: canonicalize, infer, link, audit, the retrieval index, then the snapshot.

Each stage is one class (``base.CatalogStage``) in its own module that states, once: its name, the
graph it writes, its options (a section of ``BuildConfig``), the modules whose code decides its
result, ``run(run) -> info``, how that info prints (the info's ``lines``) and, for incremental sync,
how it follows a change to a few tools (``warm``, ``update``, ``after_write``; by default it is marked
pending for the next build). ``CATALOG_STAGES`` lists them in order, for builds and syncs alike: adding a
stage is its module, a line here and its ``StageName``.

Each stage reads the whole stored catalog and swaps one named graph, under one guard
(``StageContext.stage`` with ``contain``): a failure keeps the stage's previous graph, becomes a
quarantine entry for the catalog (stage and one-line reason), and leaves the stage marked pending
(``store/build_state.py``), so the next build redoes it even when no manifest changed. A stage clears
its mark only after its graph is in, with the digest of its options and code: other options or newer
rules make it due again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkg.failures import fault_point
from toolkg.flows.stages.audit import Audit
from toolkg.flows.stages.base import CatalogRun, CatalogStage, Runner, in_process
from toolkg.flows.stages.canonicalize import Canonicalize
from toolkg.flows.stages.infer import Infer
from toolkg.flows.stages.link import Link
from toolkg.flows.stages.retrieval_index import RetrievalIndex
from toolkg.paths import store_cache
from toolkg.stages import StageName
from toolkg.store.build_state import clear_pending, options_digests
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.snapshots import PreparedSnapshot, current_snapshot, prepare_snapshot

if TYPE_CHECKING:
    from toolkg.canonicalize.inference.confirm import DependencyConfirmer

__all__ = ["CATALOG_STAGES", "CatalogRun", "CatalogStage", "Runner", "in_process", "run_catalog_stages"]

CATALOG_STAGES: tuple[CatalogStage, ...] = (Canonicalize(), Infer(), Link(), Audit(), RetrievalIndex())


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


def prepare_snapshot_if_due(run: CatalogRun, changed: bool, pending: set[str]) -> PreparedSnapshot | None:
    """The endpoint serves snapshots, never the live database: checkpoint one when the graph changed, when an
    earlier build owes one, or when there is none yet. It is not current yet: ``publish_prepared`` makes it
    so once the run's summary is saved (a failed build publishes nothing)."""
    store, summary = run.store, run.ctx.summary
    if not store.publishes_snapshots:
        return None
    prepared = None
    if changed or StageName.SNAPSHOT in pending or current_snapshot(store.directory) is None:
        with run.ctx.stage(StageName.SNAPSHOT, contain=True):
            prepared = prepare_snapshot(store, summary.run_id)
            summary.snapshot = prepared.name
    return prepared


def publish_prepared(store: ToolStore, prepared: PreparedSnapshot) -> None:
    """Make the prepared snapshot current, then clear the stage's pending mark. The mark goes last: a build
    killed (or stopped by a full disk) in between leaves it, and the next build publishes again."""
    prepared.publish()
    fault_point(StageName.SNAPSHOT)
    clear_pending(store, StageName.SNAPSHOT)


def make_confirmer(store_dir: str, llm_config: str | None) -> DependencyConfirmer:
    from toolkg.canonicalize.inference.confirm import DependencyConfirmer  # openai + instructor load only when used
    from toolkg.llm.config import load_llm_config

    config = load_llm_config(llm_config)
    config.require_endpoint()
    return DependencyConfirmer(config, store_cache(store_dir, "llm"))
