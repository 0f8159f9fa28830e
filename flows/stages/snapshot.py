"""Snapshot: the read-only copy of the store the endpoint serves (``toolkg serve``), never the live database.

It runs last, in two halves: ``run`` checkpoints a snapshot when the graph changed, when an earlier build owes
one, or when there is none yet, but does not make it current; ``publish`` does, once the run's summary is
saved (a failed build publishes nothing), and clears the stage's pending mark last, so a build killed in
between leaves the mark and the next build publishes again.
"""

from __future__ import annotations

from toolkg.failures import fault_point
from toolkg.flows.stages.base import CatalogRun
from toolkg.models import StageInfo
from toolkg.stages import StageBase, StageName
from toolkg.store.build_state import clear_pending
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.snapshots import PreparedSnapshot, current_snapshot, prepare_snapshot


class SnapshotInfo(StageInfo):
    """The snapshot a run prepared (``snapshots/<name>``), as the run summary names it."""

    snapshot: str

    def summary_fields(self) -> dict[str, str]:
        return {"snapshot": self.snapshot}


class Snapshot(StageBase):
    """Checkpoint the store into ``snapshots/<run id>`` (``run``), then make it current (``publish``)."""

    name = StageName.SNAPSHOT
    code = ("toolkg.store.snapshots",)

    def run(self, run: CatalogRun, changed: bool, pending: set[str]) -> PreparedSnapshot | None:
        """The run's snapshot, prepared but not current, when one is due (None otherwise, or for a store on a
        SPARQL server, which publishes none)."""
        store, summary = run.store, run.ctx.summary
        if not store.publishes_snapshots:
            return None
        prepared = None
        if changed or StageName.SNAPSHOT in pending or current_snapshot(store.directory) is None:
            with run.ctx.stage(StageName.SNAPSHOT, contain=True):
                prepared = prepare_snapshot(store, summary.run_id)
                summary.fold(SnapshotInfo(snapshot=prepared.name))
        return prepared

    def publish(self, store: ToolStore, prepared: PreparedSnapshot) -> None:
        """Make the prepared snapshot current, then clear the stage's pending mark (last: see the module doc)."""
        prepared.publish()
        fault_point(StageName.SNAPSHOT)
        clear_pending(store, StageName.SNAPSHOT)

    def publish_now(self, store: ToolStore, name: str) -> SnapshotInfo:
        """Checkpoint and publish at once, then clear the mark: an incremental sync (flows/sync/servers.py),
        which marks the snapshot pending before it writes and has no summary to save first."""
        self.publish(store, prepare_snapshot(store, name))
        return SnapshotInfo(snapshot=name)


SNAPSHOT = Snapshot()
