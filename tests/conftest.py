"""Shared fixtures: one Prefect test server per session, a temporary store, the CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

# Prefect reads its settings at import: isolate it before anything imports it.
_PREFECT_HOME = tempfile.mkdtemp(prefix="toolkg-prefect-")
os.environ["PREFECT_HOME"] = _PREFECT_HOME
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["PREFECT_LOGGING_LEVEL"] = "WARNING"
os.environ.pop("PREFECT_API_URL", None)
os.environ.pop("TOOLKG_STORE", None)

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CASES = Path(__file__).resolve().parent / "cases"
DATA = ROOT / "data"
TOOLKG = Path(sys.executable).with_name("toolkg")


@pytest.fixture(scope="session")
def prefect_api() -> str:
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
    """Run the installed `toolkg` console script; returns the CompletedProcess."""

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


@pytest.fixture
def build(prefect_api: str):
    """Run the build flow in-process against the session's Prefect server."""
    from toolkg.flows.build import build_catalog

    def run(paths, store: Path, **options):
        return build_catalog(paths=[str(p) for p in paths], store_dir=str(store), config=build_config(**options))

    return run
