"""The shared local Prefect server, the way a user meets it: the real `toolkg` CLI in subprocesses, with a
PREFECT_HOME of its own and no PREFECT_API_URL.

A build starts one server under PREFECT_HOME and later builds reuse it; it stops by itself once no toolkg
command has used it for TOOLKG_PREFECT_IDLE_SECONDS, also after a build killed with SIGKILL; a server that
cannot start ends the build with one line saying what to do; `toolkg prefect-server status|stop`.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import CASES, TOOLKG

pytestmark = pytest.mark.timeout(300)

CATALOG = CASES / "openai_tools.json"
STATE = "toolkg-local-server.json"
STARTING = "starting the shared local Prefect server"


def _kill_servers(home: Path) -> None:
    for pid in _servers(home):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def first_build(tmp_path_factory):
    """The first build under a fresh PREFECT_HOME: it starts the server and creates its database."""
    home = tmp_path_factory.mktemp("first-prefect-home")
    store = tmp_path_factory.mktemp("first") / "store"
    started = time.monotonic()
    result = _build(_env(home), store)
    yield home, store, result, time.monotonic() - started
    _kill_servers(home)


@pytest.fixture(scope="module")
def database(first_build, tmp_path_factory) -> Path:
    """A copy of that server's database: the other tests start from it and skip its creation (10+ s)."""
    home = first_build[0]
    copy = tmp_path_factory.mktemp("template") / "prefect.db"
    with sqlite3.connect(home / "prefect.db") as source, sqlite3.connect(copy) as target:
        source.backup(target)  # consistent while the server has it open
    return copy


@pytest.fixture
def home(tmp_path: Path, database: Path):
    """A PREFECT_HOME with a database but no server; any server still running under it is killed afterwards."""
    path = tmp_path / "prefect-home"
    path.mkdir()
    shutil.copy(database, path / "prefect.db")
    yield path
    _kill_servers(path)


# Direct launches, not the cli fixture: these builds must run without the session's PREFECT_API_URL (and with a
# fresh PREFECT_HOME), so that the build starts the shared local Prefect server this module tests.
def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "TOOLKG_PREFECT_"))}
    return {**env, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", **extra}


def _build(env: dict[str, str], store: Path, *args: str, catalog: Path = CATALOG) -> subprocess.CompletedProcess:
    command = [str(TOOLKG), "build", str(catalog), "--store", str(store), "--no-links", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)


def _timed_build(env: dict[str, str], store: Path) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    result = _build(env, store)
    return result, time.monotonic() - started


def _state(home: Path) -> dict | None:
    path = home / STATE
    return json.loads(path.read_text()) if path.exists() else None


def _servers(home: Path) -> list[int]:
    """Pids of live server processes started for ``home`` (zombies excluded)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        if b"toolkg.flows.local_server" in argv and os.fsencode(str(home)) in argv:
            if stat.rpartition(")")[2].split()[0] != "Z":
                found.append(int(proc.name))
    return found


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def _lease_held(home: Path) -> bool:
    with open(home / "toolkg-local-server.lease", "a+") as lease:
        try:
            fcntl.flock(lease, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(lease, fcntl.LOCK_UN)
        return False


def _wait_until(condition, seconds: float, what: str) -> float:
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < seconds, f"not within {seconds} s: {what}"
        time.sleep(0.2)
    return time.monotonic() - started


def _errors(stderr: str) -> list[str]:
    """stderr without the progress lines ('[toolkg] ...')."""
    return [line for line in stderr.splitlines() if not line.startswith("[toolkg] ")]


def test_builds_share_one_server_until_stopped_and_a_configured_api_wins(first_build, tmp_path):
    home, store, first, first_seconds = first_build
    env = _env(home)
    assert first.returncode == 0, first.stderr
    assert STARTING in first.stderr and "first start: creating its database" in first.stderr
    state = _state(home)
    assert state and state["url"].startswith("http://127.0.0.1:") and _healthy(state["url"])
    assert _servers(home) == [state["pid"]]
    assert (home / "toolkg-local-server.log").exists()
    assert not _lease_held(home)  # the build exited: its lease is gone, the server waits for the next one

    started = time.monotonic()
    second = _build(env, store)  # an unchanged rerun
    second_seconds = time.monotonic() - started
    assert second.returncode == 0, second.stderr
    assert STARTING not in second.stderr and "unchanged" in second.stdout
    assert _state(home)["pid"] == state["pid"] and _servers(home) == [state["pid"]]
    assert second_seconds < 0.6 * first_seconds, (first_seconds, second_seconds)
    assert _errors(second.stderr) == []

    # PREFECT_API_URL set by the user wins: nothing is started under that process's PREFECT_HOME.
    other = tmp_path / "other-home"
    other.mkdir()
    third = _build(_env(other, PREFECT_API_URL=state["url"]), tmp_path / "store3")
    assert third.returncode == 0, third.stderr
    assert STARTING not in third.stderr and _state(other) is None and _servers(other) == []
    assert _servers(home) == [state["pid"]]

    # toolkg prefect-server status|stop
    status = _server_command(env)  # status is the default
    assert status.returncode == 0, status.stderr
    assert state["url"] in status.stdout and f"pid {state['pid']}" in status.stdout and "idle" in status.stdout
    assert "toolkg prefect-server stop" in status.stdout
    noted = _server_command({**env, "PREFECT_API_URL": "http://127.0.0.1:4200/api"}, "status")
    assert noted.returncode == 0 and "PREFECT_API_URL is set" in noted.stderr
    stop = _server_command(env, "stop")
    assert stop.returncode == 0 and f"stopped the shared local Prefect server at {state['url']}" in stop.stdout
    assert _servers(home) == [] and _state(home) is None and not _healthy(state["url"])
    for action in ("status", "stop"):
        none = _server_command(env, action)
        assert none.returncode == 0 and none.stdout.startswith("no shared local Prefect server running")


def _server_command(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(TOOLKG), "prefect-server", *args], env=env, capture_output=True, text=True)


def test_concurrent_builds_start_one_server_which_stops_when_idle(home, tmp_path, first_build):
    env = _env(home, TOOLKG_PREFECT_IDLE_SECONDS="2")
    for n in range(2):  # copies of a built store: the builds are quick unchanged reruns
        shutil.copytree(first_build[1], tmp_path / f"store{n}", symlinks=True)
    builds = [
        subprocess.Popen(
            [str(TOOLKG), "build", str(CATALOG), "--no-links", "--store", str(tmp_path / f"store{n}")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    outputs = [b.communicate(timeout=240) for b in builds]
    assert [b.returncode for b in builds] == [0, 0], [err for _, err in outputs]
    assert sum(err.count(STARTING) for _, err in outputs) == 1  # the other one waited for it and reused it
    log = (home / "toolkg-local-server.log").read_text()
    assert log.count("serving on") == 1

    _wait_until(lambda: not _servers(home), 30, "the server stops 2 s after its last client")
    assert _state(home) is None
    log = (home / "toolkg-local-server.log").read_text()
    assert "idle for 2 s: stopping" in log and log.rstrip().endswith("stopped")


def _running_flow_runs(url: str) -> list:
    body = json.dumps({"flow_runs": {"state": {"type": {"any_": ["RUNNING"]}}}}).encode()
    request = urllib.request.Request(
        url + "/flow_runs/filter", data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.loads(response.read())
    except OSError:
        return []


def test_a_build_killed_with_sigkill_leaves_no_server_behind(home, tmp_path):
    env = _env(home, TOOLKG_PREFECT_IDLE_SECONDS="3")
    build = subprocess.Popen(
        [str(TOOLKG), "build", str(CATALOG), "--store", str(tmp_path / "store"), "--no-links"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:  # kill it while its flow runs (a first build of a store takes seconds: the extractor loads spaCy)
        _wait_until(lambda: _state(home) or build.poll() is not None, 120, "the build starts a server")
        url = _state(home)["url"]
        _wait_until(lambda: _running_flow_runs(url) or build.poll() is not None, 120, "the flow runs")
        assert build.poll() is None, "the build ended before it could be killed mid-run"
        assert _lease_held(home)
        build.send_signal(signal.SIGKILL)
        assert build.wait(30) == -signal.SIGKILL
    finally:
        build.kill()
    pid = _state(home)["pid"]
    assert not _lease_held(home)  # the kernel dropped the killed build's lease
    assert _servers(home) == [pid]
    _wait_until(lambda: not _servers(home), 40, "the server stops 3 s after the killed build")
    assert _state(home) is None


def test_a_server_that_does_not_start_in_time_is_one_line_and_exit_1(home, tmp_path):
    env = _env(home, TOOLKG_PREFECT_STARTUP_SECONDS="0.2")  # no server is up 0.2 s (then 0.6 s) after start
    result = _build(env, tmp_path / "store", "-q")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("toolkg: error: the local Prefect server did not start (waited 0.2 s, then 0.6 s")
    assert "prefect server start" in result.stderr and "PREFECT_API_URL=http://127.0.0.1:4200/api" in result.stderr
    assert str(home / "toolkg-local-server.log") in result.stderr
    _wait_until(lambda: not _servers(home), 15, "the servers that did not start are stopped")
    assert _state(home) is None


def test_a_server_that_exits_at_start_fails_fast(home, tmp_path):
    # A database it cannot create: the server exits during start-up, twice, and the build says so at once.
    env = _env(home, PREFECT_API_DATABASE_CONNECTION_URL=f"sqlite+aiosqlite:///{tmp_path}/missing/dir/prefect.db")
    started = time.monotonic()
    result = _build(env, tmp_path / "store")  # not quiet: the progress lines say what it tried
    assert time.monotonic() - started < 60  # not the full 60 s + 180 s wait
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.count(STARTING) == 2 and "(attempt 2, waiting up to 180 s)" in result.stderr
    (error,) = _errors(result.stderr)
    assert error.startswith("toolkg: error: the local Prefect server did not start") and "prefect server start" in error
    assert "unable to open database file" in (home / "toolkg-local-server.log").read_text()
    assert _servers(home) == [] and _state(home) is None
