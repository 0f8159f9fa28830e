"""Shared fixtures: one Prefect test server per session, a temporary store, the CLI in-process (``cli``) or in a
subprocess (``cli_process``), and stores
built once per session (``built_store``); each test's layer marker, taken from its folder.

The layers: tests/unit/<package>/ (no Prefect, no subprocess of toolkg: seconds), tests/integration/ (stores
built in-process by the pipeline's Prefect-free core), tests/e2e/ (the CLI, the docs, the browser, live MCP
servers, `toolkg serve` over HTTP, a Prefect server). `make test-fast` runs the first two without the tests marked slow;
`make test` runs everything.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

# Prefect reads its settings at import: isolate it before anything imports it. Under pytest-xdist every worker
# imports this module itself, so each worker has its own PREFECT_HOME (and its own test server, below).
_PREFECT_HOME = tempfile.mkdtemp(prefix="toolkg-prefect-")
os.environ["PREFECT_HOME"] = _PREFECT_HOME
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["PREFECT_LOGGING_LEVEL"] = "WARNING"
os.environ.pop("PREFECT_API_URL", None)
os.environ.pop("TOOLKG_STORE", None)
# xdist's workers start with COLUMNS=80 in their environment, which a pipe's reader never has: tables would be cut
# to 80 columns under -n 2 and whole without it. A test that asks for a width sets COLUMNS itself.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)
# The machine-wide vector cache stays out of the tests (a test's stub vectors must never reach a user's builds);
# tests/unit/embeddings/test_vector_cache.py turns it on over a temporary folder.
os.environ["TOOLKG_SHARED_VECTORS"] = "0"
# Nor do the tests touch the user's settings: `toolkg mcp --transport http` creates its token file there.
os.environ["TOOLKG_CONFIG_DIR"] = tempfile.mkdtemp(prefix="toolkg-config-")
os.environ.pop("TOOLKG_MCP_TOKEN", None)
# One OpenBLAS thread per process (NumPy reads the variable once, as it loads; a setting of the user's wins). Under
# `-n 2` each worker is one of the two cores' processes, and OpenBLAS's default two threads each make four busy
# waiters on two cores. Measured (2 cores): test_onnx_graph's property test 5.4 s alone on the default threads,
# 1.2 s on one, 28-30 s under -n 2 beside the other worker. `toolkg retrieve` sets the same for the same reason.
if "numpy" not in sys.modules:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

# The helpers in tests/support/ assert too: rewrite them as pytest rewrites test modules, for the same failure detail.
pytest.register_assert_rewrite("tests.support")

ROOT = Path(__file__).resolve().parents[1]
CASES = Path(__file__).resolve().parent / "cases"
DATA = ROOT / "data"
TOOLKG = Path(sys.executable).with_name("toolkg")

# Hypothesis profiles, loaded for the whole session (as they were when the hostile-catalog tests' module, which
# every full run imports, registered them): "ci" fixes the seed; `make fuzz` picks "fuzz" for many more examples.
settings.register_profile(
    "ci",
    max_examples=20,
    derandomize=True,  # a fixed seed: the same examples on every run
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
settings.register_profile("fuzz", parent=settings.get_profile("ci"), max_examples=400, derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

LAYERS = ("unit", "integration", "e2e")


def pytest_collection_modifyitems(config, items):
    """Mark each test with its layer (its folder under tests/), so `-m unit` or `-m "not e2e"` select by layer."""
    here = Path(__file__).resolve().parent
    for item in items:
        try:
            parts = Path(item.path).resolve().relative_to(here).parts
        except ValueError:
            continue
        if parts[0] in LAYERS:
            item.add_marker(getattr(pytest.mark, parts[0]))


@pytest.fixture(scope="session")
def prefect_api() -> Iterator[str]:
    """A temporary Prefect server for the whole session; its API URL for subprocesses."""
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=90):
        yield PREFECT_API_URL.value()


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def cli(prefect_api: str):
    """Run ``toolkg ARGS...`` in this process through ``toolkg.cli.main`` (tests/support/cli_runner.py): a
    CompletedProcess (returncode, stdout, stderr) as the console script's subprocess would give, without its
    seconds of Python and Prefect start-up. For what only a process shows, ``cli_process``."""
    from tests.support.cli_runner import run_in_process

    def run(
        *args: str, input: str | None = None, cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess:
        return run_in_process(*args, input=input, cwd=cwd, env={"PREFECT_API_URL": prefect_api, **(env or {})})

    return run


@pytest.fixture
def cli_process(prefect_api: str):
    """Run the installed `toolkg` console script in a subprocess; returns the CompletedProcess. For what only a
    real process shows: a kill at a fault point, signals, Prefect's console logs, a terminal, the script itself."""

    def run(
        *args: str, input: str | None = None, cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess:
        environment = {**os.environ, "PREFECT_API_URL": prefect_api, **(env or {})}
        return subprocess.run(
            [str(TOOLKG), *args], capture_output=True, text=True, input=input, env=environment, cwd=cwd, timeout=300
        )

    return run


def build_config(**options):
    """A BuildConfig from the build command's flat option names (``links=False``, ``limits={...}``)."""
    from toolkg.config import BuildConfig

    if isinstance(options.get("links"), bool):
        options["link"] = options.pop("links")
    sections = {name: options.pop(name) or {} for name in BuildConfig.sections() if name in options}
    return BuildConfig().with_values({"build": options, **sections})


def build_in_process(paths, store: Path, **options):
    """The in-process build every fixture here runs: the pipeline's Prefect-free core, which writes what the
    Prefect build flow writes (tests/integration/test_pipeline_core.py); the CLI tests run the flow itself."""
    from toolkg.flows.pipeline import run_pipeline

    return run_pipeline([str(p) for p in paths], str(store), build_config(**options))


@pytest.fixture
def build():
    """Build in-process with the pipeline's core: no Prefect server to start."""
    return build_in_process


class BuiltStores:
    """``built_store(catalog, **flags)``: the store a clean build of ``catalog`` (a path or a list of them) with
    the build's ``flags`` makes, built once per session (per xdist worker) and shared: callers only READ it.
    A test that changes a store copies one first (``built_store.copy``) or builds its own."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.summaries: dict[Path, object] = {}  # store path -> the BuildSummary that made it
        self._stores: dict[str, Path] = {}

    def __call__(self, catalog, **flags) -> Path:
        paths = [catalog] if isinstance(catalog, str | Path) else list(catalog)
        key = json.dumps([[str(Path(p).resolve()) for p in paths], flags], sort_keys=True, default=str)
        if key not in self._stores:
            store = self.root / f"store-{len(self._stores)}"
            summary = build_in_process(paths, store, **flags)
            assert summary.exit_code == 0, [str(q) for q in summary.quarantined]
            self.summaries[store] = summary
            self._stores[key] = store
        return self._stores[key]

    def copy(self, catalog, destination: Path, **flags) -> Path:
        """A private copy of the shared store (the build closed it: the directory is the whole store)."""
        shutil.copytree(self(catalog, **flags), destination)
        return destination


@pytest.fixture(scope="session")
def built_store(tmp_path_factory) -> BuiltStores:
    """Stores built in-process once per session, keyed by catalog and flags (see ``BuiltStores``)."""
    return BuiltStores(tmp_path_factory.mktemp("built-stores"))
