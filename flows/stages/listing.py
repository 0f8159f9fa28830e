"""List: the live MCP servers among a build's paths listed into snapshots (``toolkg.live``), which then replace
them as the build's inputs. The stage object only names the work; the pipeline folds what it returns
(``toolkg.live.LiveRefresh``) into the run summary (flows/pipeline.py)."""

from __future__ import annotations

from toolkg.live import refresh_live
from toolkg.stages import StageBase, StageName


class ListLive(StageBase):
    """Start each live server named among the paths, list its tools, write its snapshot when they changed."""

    name = StageName.LIST
    section = "live"  # timeout, concurrency, env
    code = ("toolkg.live",)
    run = staticmethod(refresh_live)


LIST = ListLive()
