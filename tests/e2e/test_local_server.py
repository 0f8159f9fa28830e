"""The shared local Prefect server, the way a user meets it: the real `toolkg` CLI in subprocesses, with a
PREFECT_HOME of its own and no PREFECT_API_URL.

A build starts one server under PREFECT_HOME and later builds reuse it; it stops by itself once no toolkg
command has used it for TOOLKG_PREFECT_IDLE_SECONDS, also after a build killed with SIGKILL, and whatever happens
to its home meanwhile (deleted, its files deleted or replaced, its lock held by someone else); a server that
cannot start ends the build with one line saying what to do; `toolkg prefect-server status|stop`.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from contextlib import ExitStack
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
def machine_cache(tmp_path_factory) -> Path:
    """TOOLKG_CACHE_DIR of a machine that never started a server: no database kept to start from."""
    return tmp_path_factory.mktemp("machine-cache")


@pytest.fixture(scope="module")
def first_build(tmp_path_factory, machine_cache):
    """The first build under a fresh PREFECT_HOME: it starts the server and creates its database."""
    home = tmp_path_factory.mktemp("first-prefect-home")
    store = tmp_path_factory.mktemp("first") / "store"
    started = time.monotonic()
    result = _build(_env(home, TOOLKG_CACHE_DIR=str(machine_cache)), store)
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


def _written_state(home: Path) -> dict:
    """The state file a running server has written."""
    state = _state(home)
    assert state is not None, f"no {STATE} in {home}"
    return state


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
        ours = any(arg.startswith(b"toolkg.flows.local_server") for arg in argv)  # the module run with -m
        if ours and os.fsencode(str(home)) in argv:
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
    # The server's first start is a one-off, shown apart from what every build pays.
    once, wall, pipeline, orchestration, start = _timings(first.stdout)
    assert once == "Prefect server first start (once per PREFECT_HOME, creating its database)"
    assert start is not None and start > 1 and abs(wall - (pipeline + orchestration + start)) < 0.05, first.stdout

    started = time.monotonic()
    second = _build(env, store)  # an unchanged rerun
    second_seconds = time.monotonic() - started
    assert second.returncode == 0, second.stderr
    assert STARTING not in second.stderr and "unchanged" in second.stdout
    assert _written_state(home)["pid"] == state["pid"] and _servers(home) == [state["pid"]]
    assert second_seconds < 0.6 * first_seconds, (first_seconds, second_seconds)
    assert _errors(second.stderr) == []
    once, wall, pipeline, orchestration, start = _timings(second.stdout)
    assert once is None and start is None and abs(wall - (pipeline + orchestration)) < 0.05, second.stdout

    # PREFECT_API_URL set by the user wins: nothing is started under that process's PREFECT_HOME.
    other = tmp_path / "other-home"
    other.mkdir()
    key = (Path(os.environ["TOOLKG_CONFIG_DIR"]) / "prefect-api-auth").read_text().strip()  # as docs/operations.md
    third = _build(_env(other, PREFECT_API_URL=state["url"], PREFECT_API_AUTH_STRING=key), tmp_path / "store3")
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


def test_a_new_home_starts_from_the_database_the_machine_kept(first_build, machine_cache, tmp_path):
    home = first_build[0]
    kept = list(machine_cache.glob("prefect/*/prefect.db"))
    assert len(kept) == 1 and kept[0].stat().st_size > 0  # taken once the first server answered
    fresh = tmp_path / "fresh-home"
    fresh.mkdir()
    try:
        result = _build(_env(fresh, TOOLKG_CACHE_DIR=str(machine_cache)), tmp_path / "store")
        assert result.returncode == 0, result.stderr
        assert STARTING in result.stderr and "creating its database" not in result.stderr
        assert "Prefect server start (none was running" in result.stdout, result.stdout
        assert (fresh / "prefect.db").stat().st_size > 0 and _servers(fresh) and _servers(home) != _servers(fresh)
        with sqlite3.connect(fresh / "prefect.db") as db:  # the build's run went into the seeded database
            assert db.execute("SELECT count(*) FROM flow_run").fetchone()[0] >= 1
    finally:
        _kill_servers(fresh)


WALL = re.compile(
    r"  wall time: ([\d.]+)s \(pipeline ([\d.]+)s, Prefect orchestration ([\d.]+)s"
    r"(?:, Prefect server start ([\d.]+)s)?\)"
)


def _timings(stdout: str) -> tuple[str | None, float, float, float, float | None]:
    """From a build's summary: the one-off server start's line (what it says), wall, pipeline, orchestration and
    server start seconds, as its last lines give them."""
    lines = stdout.rstrip("\n").splitlines()
    match = WALL.fullmatch(lines[-1])
    assert match, lines[-1]
    wall, pipeline, orchestration = (float(g) for g in match.group(1, 2, 3))
    start = float(match[4]) if match[4] else None  # the server start's part, when the build started one
    once = re.fullmatch(r"  (Prefect server .*): ([\d.]+)s", lines[-2])
    if start is None:
        assert once is None, lines[-2]
        return None, wall, pipeline, orchestration, None
    assert once and float(once[2]) == start, lines[-2]
    return once[1], wall, pipeline, orchestration, start


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
    onces = sorted(str(_timings(out)[0]) for out, _ in outputs)  # the one that started it says so, with its cost
    assert onces == ["None", "Prefect server start (none was running; later builds reuse it until it is idle 2 s)"]
    log = (home / "toolkg-local-server.log").read_text()
    assert log.count("serving on") == 1

    _wait_until(lambda: not _servers(home), 30, "the server stops 2 s after its last client")
    assert _state(home) is None
    log = (home / "toolkg-local-server.log").read_text()
    assert "idle for 2 s: stopping" in log and log.rstrip().endswith("stopped")


def _running_flow_runs(url: str) -> list:
    body = json.dumps({"flow_runs": {"state": {"type": {"any_": ["RUNNING"]}}}}).encode()
    key = (Path(os.environ["TOOLKG_CONFIG_DIR"]) / "prefect-api-auth").read_text().strip()  # the server asks it
    headers = {"Content-Type": "application/json", "Authorization": "Basic " + base64.b64encode(key.encode()).decode()}
    request = urllib.request.Request(url + "/flow_runs/filter", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.loads(response.read())
    except OSError:
        return []


# A build whose event sender still holds a backlog when the command returns, as on a loaded machine: Prefect's
# EventsWorker then says "Still processing items: N items remaining" as it flushes at interpreter exit, unless
# the build drained it while its logger was still lowered (toolkg.cli.build._quiet_prefect).
BACKLOG = """
import sys
import toolkg.cli.build as build_command
from toolkg.cli import main

run = build_command._run_build


def with_a_backlog(*args):
    code = run(*args)
    from prefect.events import emit_event

    for i in range(300):
        emit_event(event="toolkg.test.backlog", resource={"prefect.resource.id": f"toolkg.test.{i}"})
    return code


build_command._run_build = with_a_backlog
sys.exit(main(sys.argv[1:]))
"""


def test_a_build_sends_its_events_before_it_returns_and_says_nothing_of_them(home, tmp_path):
    command = [sys.executable, "-c", BACKLOG, "build", str(CATALOG), "--store", str(tmp_path / "store"), "--no-links"]
    result = subprocess.run(command, env=_env(home), capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    assert _errors(result.stderr) == [], result.stderr


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
        url = _written_state(home)["url"]
        _wait_until(lambda: _running_flow_runs(url) or build.poll() is not None, 120, "the flow runs")
        assert build.poll() is None, "the build ended before it could be killed mid-run"
        assert _lease_held(home)
        build.send_signal(signal.SIGKILL)
        assert build.wait(30) == -signal.SIGKILL
    finally:
        build.kill()
    pid = _written_state(home)["pid"]
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
    # Fast means it did not wait its start-up periods out: made far longer (1 h, then 3 h) than the build's 240 s
    # timeout, so only a build that saw the server exit can end at all, however loaded the machine is (a bound
    # on wall time was what a busy machine broke).
    env = _env(
        home,
        PREFECT_API_DATABASE_CONNECTION_URL=f"sqlite+aiosqlite:///{tmp_path}/missing/dir/prefect.db",
        TOOLKG_PREFECT_STARTUP_SECONDS="3600",
    )
    result = _build(env, tmp_path / "store")  # not quiet: the progress lines say what it tried
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.count(STARTING) == 2 and "(attempt 2, waiting up to 10800 s)" in result.stderr
    (error,) = _errors(result.stderr)
    assert error.startswith("toolkg: error: the local Prefect server did not start") and "prefect server start" in error
    assert "unable to open database file" in (home / "toolkg-local-server.log").read_text()
    assert _servers(home) == [] and _state(home) is None


# -- whatever happens to its home, the server stops within its idle period ------------------------------------------

IDLE = 3  # seconds: TOOLKG_PREFECT_IDLE_SECONDS for these servers
MARGIN = 8  # seconds past it: the watchdog's check interval and a graceful shutdown, on a busy 2-core machine
LOCK_PATIENCE = 5  # seconds a due idle stop waits for the start-up lock before stopping without it


def _start_idle_server(home: Path) -> int:
    """A server started for ``home`` the way a build starts it, by a client that has exited: idle from now on."""
    code = "import sys, pathlib, toolkg.flows.local_server as server; server.acquire(pathlib.Path(sys.argv[1]))"
    env = _env(home, TOOLKG_PREFECT_IDLE_SECONDS=str(IDLE))
    started = subprocess.run([sys.executable, "-c", code, str(home)], env=env, capture_output=True, text=True)
    assert started.returncode == 0, started.stderr
    state = _state(home)
    assert state and _servers(home) == [state["pid"]]
    return state["pid"]


def _flock(stack: ExitStack, path: Path, mode: int) -> None:
    """Hold a flock on ``path`` until the test ends (what a client or a stuck process would do)."""
    handle = stack.enter_context(open(path, "a+"))  # noqa: SIM115
    fcntl.flock(handle, mode)


def _delete_home(home: Path, stack: ExitStack) -> None:
    shutil.rmtree(home)  # a temporary home removed under a running server (tests, CI, benchmarks)


def _delete_lease(home: Path, stack: ExitStack) -> None:
    (home / "toolkg-local-server.lease").unlink()


def _delete_state(home: Path, stack: ExitStack) -> None:
    (home / STATE).unlink()


def _delete_database(home: Path, stack: ExitStack) -> None:
    (home / "prefect.db").unlink()


def _replace_state(home: Path, stack: ExitStack) -> None:
    # Another server's state, and a lease held by that server's client: neither is this server's business.
    other = {**_written_state(home), "pid": os.getpid(), "url": "http://127.0.0.1:9/api"}
    (home / STATE).write_text(json.dumps(other))
    _flock(stack, home / "toolkg-local-server.lease", fcntl.LOCK_SH)


def _hold_lock(home: Path, stack: ExitStack) -> None:
    _flock(stack, home / "toolkg-local-server.lock", fcntl.LOCK_EX)  # and never let go


def _lease_becomes_a_directory(home: Path, stack: ExitStack) -> None:
    (home / "toolkg-local-server.lease").unlink()
    (home / "toolkg-local-server.lease").mkdir()  # no lease can be read: the watchdog fails, the server stops
    # at its next look (it cannot tell whether anyone still uses it, so it does not wait out the idle period)


@pytest.mark.parametrize(
    ("happening", "stopped_because", "patience"),
    [
        (_delete_home, f"idle for {IDLE} s (no request; its home is gone): stopping", 0),
        (_delete_lease, f"idle for {IDLE} s: stopping", 0),
        (_delete_state, f"idle for {IDLE} s (no request; its state file is gone): stopping", 0),
        # {pid}: this test process's, filled in by the test (an id must not hold it: xdist workers collect alike)
        (_replace_state, f"idle for {IDLE} s (no request; its state file names another server (pid {{pid}}))", 0),
        (_delete_database, f"idle for {IDLE} s: stopping", 0),
        (_hold_lock, f"stopping without the start-up lock (held elsewhere for {LOCK_PATIENCE} s)", LOCK_PATIENCE),
        (_lease_becomes_a_directory, "idle watchdog failed (IsADirectoryError", 0),
    ],
    ids=lambda value: value.__name__.strip("_") if callable(value) else None,
)
def test_the_server_stops_within_its_idle_period_whatever_happens_to_its_home(
    home: Path, happening: Callable[[Path, ExitStack], None], stopped_because: str, patience: int
):
    pid = _start_idle_server(home)
    with ExitStack() as stack, open(home / "toolkg-local-server.log", encoding="utf-8") as log:  # readable if deleted
        happening(home, stack)
        took = _wait_until(lambda: not _servers(home), IDLE + patience + MARGIN, f"server {pid} stops")
        lines = log.read()
    if happening is not _lease_becomes_a_directory:  # a failed watchdog stops the server at once
        assert took >= IDLE - 1, f"stopped after {took:.1f} s: before its idle period"
    assert stopped_because.format(pid=os.getpid()) in lines and lines.rstrip().endswith("stopped"), lines
    if happening is _replace_state:  # it cleared no state but its own
        assert _written_state(home)["pid"] == os.getpid()
    if happening is _delete_home:  # and wrote nothing into a home being removed
        assert not home.exists()
        for action in ("status", "stop"):  # nor do these
            none = _server_command(_env(home), action)
            assert none.returncode == 0 and none.stdout.startswith("no shared local Prefect server running"), none
        assert not home.exists()


def test_a_client_holding_a_deleted_lease_file_keeps_its_server(home: Path):
    pid = _start_idle_server(home)
    lease = home / "toolkg-local-server.lease"
    with ExitStack() as stack:
        _flock(stack, lease, fcntl.LOCK_SH)  # a build running
        lease.unlink()
        time.sleep(IDLE + 2)  # past the idle period: the build still holds its lease, on the file that was there
        assert _servers(home) == [pid] and not lease.exists()  # serving it, and no lease file made anew
    _wait_until(lambda: not _servers(home), IDLE + MARGIN, "the server stops once the build is gone")
