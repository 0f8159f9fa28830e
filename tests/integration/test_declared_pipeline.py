"""The build runs the stages ``PIPELINE`` declares: every piece of work the pipeline hands its runner (each a
Prefect task in ``toolkg build``) is the ``run`` of the declared stage of that name, so the declaration is the
code that runs, not a list beside it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.conftest import CASES
from toolkg.flows.pipeline import run_pipeline
from toolkg.flows.stages import PIPELINE
from toolkg.stages import StageName


def test_every_step_the_pipeline_runs_is_a_declared_stage_run(tmp_path):
    declared = {stage.name: stage for stage in PIPELINE}
    ran: list[tuple[str, Callable[..., Any]]] = []

    def recording(name: str, work: Callable[..., Any], *args: Any) -> Any:
        ran.append((name, work))
        return work(*args)

    summary = run_pipeline([str(CASES / "inference" / "shop.json")], str(tmp_path / "store"), runner=recording)
    assert summary.exit_code == 0 and summary.totals["tools"] > 0
    names = [name for name, _ in ran]
    expected = [StageName.INGEST, StageName.EXTRACT, StageName.LOAD]
    expected += [StageName.CANONICALIZE, StageName.INFER, StageName.LINK, StageName.AUDIT, StageName.INDEX]
    order = [str(stage) for stage in StageName]
    assert sorted(set(names), key=order.index) == expected
    for name, work in ran:
        assert work == declared[StageName(name)].run, name
