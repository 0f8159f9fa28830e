"""The retrieval suite's settings and stores: each catalog (data/<name>/, or a folder of real manifests), how it is
built and which of its queries a half holds; what both the suite (``run.py``) and the fit of auto's weights
(``train.py``) read, so neither imports the other.

Each catalog is built once with the CLI into benchmarks/results/stores/suite-<name> (a rebuild of an unchanged
catalog is skipped by its hashes).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from benchmarks.splits import half as half_of
from benchmarks.suite.conversational import SETS as CONVERSATIONAL
from benchmarks.suite.conversational import rows as conversational_rows
from toolkg.retrieval import Index

ROOT = Path(__file__).resolve().parents[2]
STORES = ROOT / "benchmarks" / "results" / "stores"  # run.py --stores: another folder (e.g. int8 embeddings)
TOOLKG = Path(sys.executable).with_name("toolkg")


@dataclass(frozen=True)
class Setting:
    catalog: str  # the data folder: what leave-one-catalog-out leaves out
    paths: tuple[str, ...]
    flags: tuple[str, ...] = ()
    steps: bool = True  # queries keep their steps
    store: str = ""  # the store's name, when two settings share a catalog but not a build

    @property
    def queries(self) -> Path:
        return ROOT / "data" / self.catalog / "queries.jsonl"

    @property
    def store_name(self) -> str:
        return self.store or self.catalog


SETTINGS = {
    "livemcpbench": Setting("livemcpbench", ("data/livemcpbench/tools.json",)),
    "livemcpbench-text": Setting("livemcpbench", ("data/livemcpbench/tools.json",), steps=False),
    "toollinkos": Setting("toollinkos", ("data/toollinkos",)),
    "toollinkos-declared": Setting(
        "toollinkos", ("data/toollinkos",), ("--no-infer", "--no-links"), store="toollinkos-declared"
    ),
    "bfcl": Setting("bfcl", ("data/bfcl/tools.json",)),
    "azure-mcp": Setting("azure-mcp", ("data/azure-mcp/tools.json",)),
    "apibench": Setting("apibench", ("data/apibench/tools.json",)),
    # conversational: a user's turns over a small catalog with state (benchmarks/suite/conversational.py)
    "bfcl-multi-turn": Setting("bfcl-multi-turn", ("tests/cases/real/openai/bfcl-multi-turn",)),
    "tau2": Setting("tau2", ("tests/cases/real/openai/tau2",)),
}
# Settings whose tuning rows train the calibration: one per catalog and build (the declared-only build is a
# variant of ToolLinkOS's, the text-only queries a variant of LiveMCPBench's).
TRAINING = ("livemcpbench", "toollinkos", "bfcl", "azure-mcp", "apibench", "bfcl-multi-turn", "tau2")


def rows_of(setting: Setting, half: str) -> list[dict]:
    if setting.catalog in CONVERSATIONAL:
        rows = conversational_rows(setting.catalog)
    else:
        rows = [json.loads(line) for line in setting.queries.open(encoding="utf-8") if line.strip()]
    # a conversation's turns share its half (group: the conversation's id)
    rows = [r for r in rows if half == "all" or half_of(str(r.get("group", r["id"]))) == half]
    if not setting.steps:
        rows = [{**r, "steps": []} for r in rows]
    return rows


def build(setting: Setting, folder: Path = STORES) -> Path:
    store = folder / f"suite-{setting.store_name}"
    started = time.perf_counter()
    result = subprocess.run(
        [str(TOOLKG), "build", *setting.paths, "--store", str(store), "-q", *setting.flags],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if result.returncode not in (0, 3):
        sys.exit(f"build of {store} failed:\n{result.stderr[-2000:]}")
    print(f"  built {store.name} in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    return store


def build_all(names: Iterable[str] = SETTINGS, folder: Path = STORES) -> dict[str, Path]:
    """Setting -> its store, each catalog built once (two settings may share a build)."""
    names = list(names)
    stores: dict[str, Path] = {}
    for name in names:
        setting = SETTINGS[name]
        if setting.store_name not in stores:
            stores[setting.store_name] = build(setting, folder)
    return {name: stores[SETTINGS[name].store_name] for name in names}


class CatalogSamples(Protocol):
    """What ``collect`` gives for one catalog, as far as this module reads it: its parts, and the store
    they came from (set here, to rank its queries again under new weights)."""

    store: str

    @property
    def parts(self) -> Sized: ...


Collected = TypeVar("Collected", bound=CatalogSamples)


def tuning_samples(
    stores: dict[str, Path], collect: Callable[[Index, list[dict], bool], Collected]
) -> dict[str, Collected]:
    """Calibration rows of each training catalog's tuning half, keyed by catalog. ``collect`` is train.py's
    (passed in: train.py reads this module, so this module cannot import it back)."""
    samples: dict[str, Collected] = {}
    for name in TRAINING:
        if name not in stores:
            continue
        index = Index(stores[name])
        try:
            samples[SETTINGS[name].catalog] = collect(index, rows_of(SETTINGS[name], "tune"), SETTINGS[name].steps)
            samples[SETTINGS[name].catalog].store = str(stores[name])
        finally:
            index.close()
        print(f"  calibration rows of {name}: {len(samples[SETTINGS[name].catalog].parts)} parts", file=sys.stderr)
    return samples
