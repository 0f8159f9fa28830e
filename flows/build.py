"""The build flow: the pipeline (flows/pipeline.py) as a Prefect flow, each step a Prefect task.

Prefect adds what a scheduled, observed build wants: the run in the Prefect UI with a task per step,
deployments and schedules (``toolkg schedule``), the Dask task runner for ``--dask``, and the run
summary as a markdown artifact. What the build does is the pipeline's alone: a build without Prefect
(``run_pipeline``) writes the same graphs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote
from pydantic import SecretStr

from toolkg.config import BuildConfig
from toolkg.flows.pipeline import new_summary, run_pipeline
from toolkg.live.sources import from_parameter
from toolkg.summary import BuildSummary


@cache
def _task(name: str, work: Callable[..., Any]):
    return task(name=name, cache_policy=NO_CACHE, persist_result=False)(work)  # the decorator's typed form


def as_prefect_task(name: str, work: Callable[..., Any], *args: Any) -> Any:
    """Run one step as a Prefect task named after its stage (arguments quoted: Prefect neither copies
    nor walks into the store, the models or the extractor)."""
    return _task(name, work)(*(quote(a) for a in args))


@flow(name="toolkg-build", log_prints=True, validate_parameters=False)
def build_catalog(
    paths: list[str | SecretStr], store_dir: str, config: BuildConfig | dict | None = None
) -> BuildSummary:
    """Build (or incrementally update) the knowledge graph in ``store_dir`` from manifest ``paths``.

    ``config`` (``toolkg.config.BuildConfig``, or its JSON form from a deployment) says which
    extractor runs (``offline`` rules by default, or ``llm``: an OpenAI-compatible endpoint configured
    by environment or the TOML file ``llm_config``; secrets never travel as flow parameters), which
    catalog-wide stages run and with which options, and the input limits. A server address holding a key
    comes as a ``SecretStr`` (``toolkg.live.sources.as_parameter``), so the run's stored parameters hide it.
    """
    plain = [from_parameter(path) for path in paths]
    config = config if isinstance(config, BuildConfig) else BuildConfig.model_validate(config or {})
    fan_out: Callable[..., Iterator[Any]] | None = None
    if config.dask:
        from toolkg.flows.scale import fan_out as dask_fan_out

        fan_out = dask_fan_out
    summary = new_summary(store_dir)
    try:
        return run_pipeline(plain, store_dir, config, runner=as_prefect_task, fan_out=fan_out, summary=summary)
    finally:
        create_markdown_artifact(
            key="toolkg-build-summary", markdown=summary.to_markdown(), description=f"toolkg build {summary.run_id}"
        )
