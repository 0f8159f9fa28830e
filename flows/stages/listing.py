"""List: the live MCP servers among a build's paths listed into snapshots (``toolkg.live``), which then replace
them as the build's inputs. The stage object only names the work; the pipeline folds what it returns
(``toolkg.live.LiveRefresh``) into the run summary (flows/pipeline.py)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from toolkg.live import LiveRefresh, refresh_live
from toolkg.models import StageInfo
from toolkg.stages import StageBase, StageName


class ListInfo(StageInfo):
    """What listing adds to the run summary: each live server's report, the configurations found in folders and
    not listed (never started), and the listings that failed (quarantined)."""

    live: tuple[dict[str, Any], ...] = ()
    live_skipped: tuple[dict[str, Any], ...] = ()

    def summary_fields(self) -> dict[str, Any]:
        return {"live": list(self.live), "live_skipped": list(self.live_skipped)}

    @classmethod
    def of(cls, live: LiveRefresh) -> ListInfo:
        # (every quarantine entry of a listing comes with its server's report: none without servers)
        return cls(
            live=tuple(asdict(report) for report in live.servers),
            live_skipped=tuple(asdict(skipped) for skipped in live.skipped),
            quarantined=tuple(live.quarantined),
        )


class ListLive(StageBase):
    """Start each live server named among the paths, list its tools, write its snapshot when they changed."""

    name = StageName.LIST
    section = "live"  # timeout, concurrency, env
    code = ("toolkg.live",)
    run = staticmethod(refresh_live)


LIST = ListLive()
