"""What one sync operation changed, and its one-paragraph report."""

from __future__ import annotations

from dataclasses import dataclass, field

from toolkg.flows.stages.base import StageUpdate
from toolkg.models import QuarantinedItem, ToolChange


@dataclass
class SyncResult:
    """What one operation changed, and how long it took."""

    operation: str
    target: str
    seconds: float = 0.0
    tools_changed: list[str] = field(default_factory=list)  # ids of the tools inference and links re-read
    tools: list[ToolChange] = field(default_factory=list)  # each tool added, changed (with its fields), removed
    neighbourhood: int = 0  # consumers re-inferred
    triples_deleted: int = 0
    triples_inserted: int = 0
    edges_added: int = 0
    edges_removed: int = 0
    links_added: int = 0
    links_removed: int = 0
    quarantined: list[QuarantinedItem] = field(default_factory=list)
    stage_seconds: dict[str, float] = field(default_factory=dict)  # graphs, each stage, write

    def fold(self, update: StageUpdate) -> None:
        """Add what one stage's update changed."""
        self.neighbourhood += update.neighbourhood
        self.edges_added += update.edges_added
        self.edges_removed += update.edges_removed
        self.links_added += update.links_added
        self.links_removed += update.links_removed
        self.stage_seconds.update({part: round(seconds, 4) for part, seconds in update.seconds.items()})


def format_result(r: SyncResult) -> str:
    """The operation's line (``toolkg.summary.sync_line``), each tool it changed and what it quarantined."""
    from dataclasses import asdict

    from toolkg.summary import sync_line

    lines = [sync_line(asdict(r)), *(f"  - {change}" for change in r.tools)]
    return "\n".join([*lines, *(f"  - quarantined: {q}" for q in r.quarantined)])
