"""Against a real Prefect server: `toolkg schedule` registers a cron deployment and a run of it
builds the catalog; `toolkg build --dask` fans extraction out over Dask worker processes.

The server is the real one users run (`prefect server start`), on a free loopback port with its own
PREFECT_HOME, started once for this module (about 15 s).
Its `toolkg` launches are direct, not the cli fixture's: they talk to this server, not the session's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import CASES, TOOLKG
from tests.support.endpoint_helpers import free_port
from tests.support.live_helpers import TOY_TOOLS, files_containing, toy_stdio

PREFECT = Path(sys.executable).with_name("prefect")


def _post(url: str, body: dict) -> object:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _run_deployment(name: str, env: dict[str, str]) -> None:
    """A run of the deployment now (what its cron fires), watched until it completes."""
    run = subprocess.run(
        [str(PREFECT), "deployment", "run", name, "--watch", "--watch-timeout", "300"],
        env=env,
        capture_output=True,
        text=True,
        timeout=360,
    )
    assert run.returncode == 0 and "Completed" in run.stdout + run.stderr, run.stdout + run.stderr


@pytest.fixture(scope="module")
def prefect_server(tmp_path_factory):
    home = tmp_path_factory.mktemp("prefect-server-home")
    port = free_port()
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    log = open(home / "server.log", "w")  # noqa: SIM115
    server = subprocess.Popen(
        [str(PREFECT), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    api = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + 120
    while True:
        assert server.poll() is None, (home / "server.log").read_text()[-2000:]
        try:
            with urllib.request.urlopen(api + "/health", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        assert time.monotonic() < deadline, "prefect server start did not answer in 120 s"
        time.sleep(0.5)
    yield api, {**env, "PREFECT_API_URL": api, "PREFECT_LOGGING_LEVEL": "WARNING"}
    server.terminate()
    server.wait(30)
    log.close()


def test_schedule_registers_a_cron_deployment_and_a_run_builds(prefect_server, tmp_path):
    api, env = prefect_server
    folder = tmp_path / "catalog"
    folder.mkdir()
    shutil.copy(CASES / "inference" / "shop.json", folder / "shop.json")
    store = tmp_path / "store"
    serving = subprocess.Popen(
        [
            str(TOOLKG),
            "schedule",
            str(folder),
            "--store",
            str(store),
            "--cron",
            "0 3 * * *",
            "--name",
            "nightly",
            "--no-links",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert serving.stderr is not None  # piped
    try:
        deadline = time.monotonic() + 120
        while True:
            assert serving.poll() is None, serving.stderr.read()
            found = _post(api + "/deployments/filter", {"deployments": {"name": {"any_": ["nightly"]}}})
            if found:
                break
            assert time.monotonic() < deadline, "the deployment was not registered"
            time.sleep(1)
        assert isinstance(found, list), found  # the filter's answer: the deployments it matched
        (deployment,) = found
        assert [s["schedule"]["cron"] for s in deployment["schedules"]] == ["0 3 * * *"]
        assert deployment["parameters"]["store_dir"] == str(store.resolve())

        # A manual run of the deployment (what the cron fires) is picked up by the serving process.
        _run_deployment("toolkg-build/nightly", env)
        stats = subprocess.run(
            [str(TOOLKG), "stats", "--store", str(store), "--json"], capture_output=True, text=True, env=env
        )
        assert json.loads(stats.stdout)["totals"]["tools"] == 20
    finally:
        serving.terminate()
        serving.wait(30)


def test_a_scheduled_configuration_relists_and_reloads_only_the_changed_server(prefect_server, tmp_path):
    """Each run of a scheduled MCP configuration lists every server again; the second run's summary names
    the tools that changed on the one server that changed, and the secret in its env is in no file."""
    api, env = prefect_server
    secret = "sk-" + os.urandom(8).hex()
    changing = tmp_path / "changing.json"
    tools = json.loads(TOY_TOOLS.read_text())
    changing.write_text(json.dumps(tools))
    config = tmp_path / "claude_desktop_config.json"
    steady = {**toy_stdio(), "env": {"BOOKINGS_API_KEY": secret}}
    config.write_text(json.dumps({"mcpServers": {"steady": steady, "changing": toy_stdio(changing)}}))
    store = tmp_path / "store"
    serving = subprocess.Popen(
        [str(TOOLKG), "schedule", str(config), "--store", str(store), "--cron", "0 * * * *", "--name", "mcp"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert serving.stderr is not None  # piped

    def run_now() -> dict:
        _run_deployment("toolkg-build/mcp", env)
        latest = max((store / "runs").glob("*/summary.json"), key=lambda p: p.stat().st_mtime)
        return json.loads(latest.read_text())

    try:
        deadline = time.monotonic() + 120
        while not _post(api + "/deployments/filter", {"deployments": {"name": {"any_": ["mcp"]}}}):
            assert serving.poll() is None, serving.stderr.read()
            assert time.monotonic() < deadline, "the deployment was not registered"
            time.sleep(1)
        first = run_now()
        changing.write_text(json.dumps([{**tools[0], "description": "Sign in."}, *tools[1:]]))
        second = run_now()
    finally:
        serving.terminate()
        serving.wait(30)
    assert {s["server"]: s["status"] for s in first["live"]} == {"steady": "new", "changing": "new"}
    live = {s["server"]: s for s in second["live"]}
    assert live["steady"]["status"] == "unchanged"
    assert (live["changing"]["status"], live["changing"]["changed"]) == ("changed", ["login"])
    assert [Path(p).name for p in second["changed"]] == ["changing.json"]
    assert files_containing([store, Path(env["PREFECT_HOME"])], secret) == []


def test_build_fans_extraction_out_over_dask_workers(prefect_server, tmp_path):
    _, env = prefect_server
    folder = tmp_path / "catalog"
    folder.mkdir()
    for n in range(4):  # four servers of 20 tools: four batches, spread over the two workers
        shutil.copy(CASES / "inference" / "shop.json", folder / f"shop{n}.json")
    store = tmp_path / "store"
    result = subprocess.run(
        [str(TOOLKG), "build", str(folder), "--store", str(store), "--dask", "local:2", "--no-links"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "extraction fanned out over 2 Dask worker process(es)" in result.stdout
    assert "4 servers, 80 tools" in result.stdout and "extraction: offline: 80 tools" in result.stdout
    summary = json.loads(next((store / "runs").glob("*/summary.json")).read_text())
    assert len(summary["workers"]) == 2 and all(":" in w for w in summary["workers"])
    # The same graph as an in-process build: the fan-out changes where work runs, not what it yields.
    plain = subprocess.run(
        [str(TOOLKG), "build", str(folder), "--store", str(tmp_path / "plain"), "--no-links"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert plain.returncode == 0
    count = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } FILTER(!CONTAINS(STR(?g), 'provenance')) }"
    counts = [
        subprocess.run(
            [str(TOOLKG), "query", "--store", str(s), count, "--format", "csv"], capture_output=True, text=True, env=env
        ).stdout
        for s in (store, tmp_path / "plain")
    ]
    assert counts[0] == counts[1] and counts[0].splitlines()[1].isdigit()

    bad = subprocess.run(
        [str(TOOLKG), "build", str(folder), "--store", str(store), "--dask", "local:0"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "positive worker count" in bad.stderr


def test_schedule_without_a_server_says_what_to_do(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    result = subprocess.run(
        [str(TOOLKG), "schedule", str(CASES), "--cron", "0 * * * *"], capture_output=True, text=True, env=env
    )
    assert result.returncode == 2 and "prefect server start" in result.stderr and result.stderr.count("\n") == 1
