"""Scale-out: extraction batches fanned out over a Dask cluster (prefect-dask).

``toolkg build --dask local[:N]`` starts a local cluster of N single-threaded worker processes (default
2); ``--dask tcp://HOST:8786`` uses a running scheduler. Extraction and SHACL
validation of each batch run on a worker; loading stays in the flow's process, the store's one writer,
which loads each batch as soon as it comes back. At most ``2 x workers`` batches are in flight, so
memory stays bounded however large the catalog.

Point the workers at a real Prefect server (PREFECT_API_URL): without one every worker process starts
a temporary server of its own, which costs 20 s or more. Only the offline extractor fans out; the LLM
extractor is I/O bound and already keeps its requests concurrent in one process.
"""

from __future__ import annotations

import os
import socket
from collections import deque
from collections.abc import Iterator, Sequence

from prefect import task
from prefect.cache_policies import NO_CACHE

from toolkg.errors import ConfigError
from toolkg.extractors.triples.semantic import make_extractor
from toolkg.failures import quarantine
from toolkg.flows.build_manifests import DEFAULT_WORKERS
from toolkg.flows.steps import EXTRACT, TransformInfo
from toolkg.stages import StageName
from toolkg.store.validation import Validator


def dask_task_runner(spec: str):
    """A DaskTaskRunner for ``local``, ``local:N`` or a scheduler address ``tcp://host:port``."""
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:  # an extra: only --dask needs it
        raise ConfigError("--dask needs the dask extra: pip install 'toolkg[dask]'") from None

    if spec == "local" or spec.startswith("local:"):
        count = spec.partition(":")[2] or str(DEFAULT_WORKERS)
        if not count.isdigit() or int(count) < 1:
            raise ConfigError(f"--dask local:N needs a positive worker count, not {spec!r}")
        kwargs = {"n_workers": int(count), "threads_per_worker": 1, "processes": True, "dashboard_address": ":0"}
        return DaskTaskRunner(cluster_kwargs=kwargs)
    if "://" not in spec:
        raise ConfigError(f"--dask takes local, local:N or a scheduler address such as tcp://host:8786, not {spec!r}")
    return DaskTaskRunner(address=spec)


class Batch:
    """A batch's manifests and the name index, as one plain object: Prefect walks into lists and
    pydantic models when it hands task arguments to Dask (turning models into tuples), not into this."""

    def __init__(self, manifests: Sequence, index) -> None:
        self.manifests = list(manifests)
        self.index = index


@task(name="extract-validate-on-worker", cache_policy=NO_CACHE, persist_result=False)
def transform_on_worker(batch: Batch, run_id: str) -> TransformInfo:
    """One batch on a Dask worker: the offline extractor, SHACL in the worker's own process."""
    with Validator(workers=1) as validator:  # Dask workers are daemonic: no process pool of their own
        info = EXTRACT.run(batch.manifests, batch.index, validator, make_extractor("offline", None), run_id)
    return info.model_copy(update={"worker": f"{socket.gethostname()}:{os.getpid()}"})


def fan_out(batches: list, index, run_id: str, in_flight: int = 2 * DEFAULT_WORKERS) -> Iterator:
    """Submit batches to the flow's task runner and yield (batch, TransformInfo) in submission order.
    A batch whose worker (or task) died comes back with each of its manifests quarantined."""
    pending: deque = deque()

    def collect():
        batch, future = pending.popleft()
        try:
            return batch, future.result()
        except Exception as exc:
            lost = [(quarantine(exc, source=r.file.path, item=r.file.path, stage=StageName.EXTRACT),) for r in batch]
            return batch, TransformInfo(
                extracted=(None,) * len(batch), problems=tuple(lost), quarantined=tuple(q for (q,) in lost)
            )

    while batches:
        batch = batches.pop(0)
        future = transform_on_worker.submit(Batch([r.manifest for r in batch], index), run_id)
        pending.append((batch, future))
        if len(pending) >= in_flight:
            yield collect()
    while pending:
        yield collect()
