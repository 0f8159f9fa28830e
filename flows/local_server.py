"""One local Prefect API server shared by every toolkg command, when no PREFECT_API_URL is configured.

Without an API URL Prefect starts a temporary server inside each process (10-15 s, and a process
killed with -9 leaves it running). Instead, ``use_shared_server()`` points the process at one server
under ``$PREFECT_HOME`` that outlives a single command and stops by itself once nobody uses it:

- ``toolkg-local-server.json`` names it (pid, port, url, started, idle period, log); a client trusts it
  only after ``GET /api/health`` answers.
- When none answers, the client starts one, detached (its own session), logging to
  ``toolkg-local-server.log``, on 127.0.0.1 and a port the kernel picked: the client binds the socket and
  hands it to the server, so no other process can take the port in between. ``toolkg-local-server.lock``
  (an exclusive ``flock``) makes discovery and start-up one step, so concurrent commands start one server.
- Every client holds a shared ``flock`` on ``toolkg-local-server.lease`` while it runs; the kernel drops it
  when the client exits, even on ``kill -9``. The server checks the lease every second and stops after
  ``TOOLKG_PREFECT_IDLE_SECONDS`` (default 120) with nobody holding it, whatever happens to its home
  meanwhile (``local_server_process``). It stops under the lock, after removing the state file, so a client
  either holds a lease on a live server or starts a new one.
- Start-up waits ``TOOLKG_PREFECT_STARTUP_SECONDS`` (default 60), then tries once more for three times as
  long; if that fails too the command ends with one line saying to run ``prefect server start`` and set
  PREFECT_API_URL.

The server is Prefect's API app under uvicorn with the UI and the scheduling services off, as Prefect's
own temporary server runs it, in its own process (``python -m toolkg.flows.local_server_process``, this
module's server side), which also runs the idle watchdog: one process, so stopping it stops everything.
``prefect server start`` answers no sooner (both about 5 s with an existing database, 10-14 s creating it,
on 2 CPUs; see benchmarks/startup_bench.py), uses about twice the CPU while idle, runs the scheduler and the
other services against the user's database (it would fire deployments registered there), and has no idle
stop: it would need a watchdog process beside it, and a ``kill -9`` of either leaves the other behind.

A client that started the server says how long that took (``SharedServer``): a build shows that one-off cost
apart from its own.

A configured API (the PREFECT_API_URL variable, or the active Prefect profile) always wins: then nothing
is started. ``toolkg prefect-server status|stop`` shows and stops the shared server.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from toolkg.environment import PREFECT_IDLE_SECONDS, PREFECT_STARTUP_SECONDS, EnvVar
from toolkg.errors import ToolkgError
from toolkg.flows.local_server_key import api_auth_string, auth_digest

STATE_FILE = "toolkg-local-server.json"
LOCK_FILE = "toolkg-local-server.lock"
LEASE_FILE = "toolkg-local-server.lease"
LOG_FILE = "toolkg-local-server.log"
# 120 s: a build, then a fix and a rebuild, reuse it; a page that finds its port has two minutes
DEFAULT_IDLE = float(PREFECT_IDLE_SECONDS.default)
DEFAULT_STARTUP = float(PREFECT_STARTUP_SECONDS.default)
RETRY_FACTOR = 3  # the second start-up attempt waits this many times longer
HINT = "start one yourself with 'prefect server start' and set PREFECT_API_URL=http://127.0.0.1:4200/api"
SERVER_MODULE = "toolkg.flows.local_server_process"  # the server's own process: serve and the idle watchdog
# What guards a server this toolkg starts (its Host/Origin check, its auth string): a state file naming an older
# guard is a server an older toolkg started without them, replaced once nobody uses it, as another Prefect's is.
GUARD = "host-origin-auth/1"

_lease: int | None = None  # this process's lease on the shared server (a file descriptor, held until exit)
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback never goes via a proxy


class LocalServerError(ToolkgError):
    """The shared local Prefect server could not be started."""


@dataclass(frozen=True)
class SharedServer:
    """The shared server this process uses, and what starting it cost this process (nothing if it ran)."""

    url: str
    start_seconds: float = 0.0  # from deciding to start one until it answered, all attempts; 0: it was running
    created_database: bool = False  # that start created Prefect's database: the first under this PREFECT_HOME


def use_shared_server(say: Callable[[str], None] | None = None) -> SharedServer | None:
    """Point this process and its children at the shared local server, starting it when none answers.

    Returns the server, or None when an API is configured (then nothing changes). Call it before the
    first flow run; ``say`` gets a line when a server is being started.
    """
    if os.environ.get("PREFECT_API_URL"):
        return None
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    if settings.api.url:  # from the active profile, prefect.toml or .env
        return None
    server = acquire(Path(settings.home).expanduser(), say=say)
    os.environ["PREFECT_API_URL"] = server.url  # children (Dask workers, subprocesses) inherit it
    os.environ["PREFECT_API_AUTH_STRING"] = api_auth_string()  # what the server asks of every API request
    import prefect.context
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY

    prefect.context.refresh_global_settings_context()  # Prefect read its settings at import: read them again
    # Flow-run heartbeats serve a full server's crash detection, which this server does not run; and each
    # flow run ends by waiting up to 1 s for the heartbeat thread's sleep (Prefect 3.8.8). Off, in-process.
    root = prefect.context.GLOBAL_SETTINGS_CONTEXT
    settings = root.settings.copy_with_update(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})
    prefect.context.GLOBAL_SETTINGS_CONTEXT = prefect.context.SettingsContext(profile=root.profile, settings=settings)
    return server


def prefect_home() -> Path:
    """PREFECT_HOME as Prefect resolves it (the variable, the profile, or ~/.prefect)."""
    if home := os.environ.get("PREFECT_HOME"):  # the variable wins over every other source: skip Prefect's import
        return Path(home).expanduser()
    from prefect.settings import get_current_settings

    return Path(get_current_settings().home).expanduser()


def idle_seconds() -> float:
    return _seconds(PREFECT_IDLE_SECONDS)


def startup_seconds() -> float:
    return _seconds(PREFECT_STARTUP_SECONDS)


def _seconds(variable: EnvVar) -> float:
    name, raw = variable.name, variable.get().strip()
    try:
        value = float(raw)
    except ValueError:
        raise LocalServerError(f"{name} takes a number of seconds, not {raw!r}") from None
    if value < 0:
        raise LocalServerError(f"{name} must not be negative, not {raw!r}")
    return value


# -- the client side -------------------------------------------------------------------------------


def acquire(home: Path, say: Callable[[str], None] | None = None) -> SharedServer:
    """Hold a lease on the shared server under ``home`` (starting it if needed)."""
    home.mkdir(parents=True, exist_ok=True)
    idle, startup = idle_seconds(), startup_seconds()  # bad values fail before anything starts
    take_lease(home)  # first: a server never stops while a client is looking for it
    try:
        return _find_or_start(home, idle, startup, say)
    except BaseException:
        release_lease()
        raise


def _find_or_start(home: Path, idle: float, startup: float, say: Callable[[str], None] | None) -> SharedServer:
    with _locked(home / LOCK_FILE):
        state = read_state(home)
        if state and _reusable(home, state, startup):
            return SharedServer(state["url"])
        log = home / LOG_FILE
        waits = (startup, startup * RETRY_FACTOR)
        began = time.perf_counter()
        creating = not (home / DATABASE).exists()
        if creating and _seed_database(home):
            creating = False  # a copy of the database as Prefect made it: the server starts as on an old home
        for attempt, wait in enumerate(waits, start=1):
            if say:
                first = ", first start: creating its database" if creating else ""
                again = f" (attempt {attempt}, waiting up to {wait:g} s)" if attempt > 1 else ""
                say(f"starting the shared local Prefect server{first}{again}; it stops after {idle:g} s idle")
            state = _start(home, idle, log)
            if _wait_healthy(state["url"], state["pid"], wait):
                if creating:
                    _keep_template(home)
                return SharedServer(state["url"], time.perf_counter() - began, creating)
            _kill(state["pid"])
            clear_state(home, state["pid"])
        raise LocalServerError(
            f"the local Prefect server did not start (waited {waits[0]:g} s, then {waits[1]:g} s; "
            f"its log: {log}); {HINT}"
        )


# Prefect creates its database on a server's first start by running its migrations: 10-14 s of the first
# build on a new PREFECT_HOME (tests, CI and benchmarks each make one), where a server on an existing
# database answers in about 5 s. The first database this machine's Prefect version made is kept (a
# consistent copy taken by SQLite's backup once the server answers, before any run is recorded) and a new
# home starts from a copy of it: the migrations are paid once per machine and Prefect version.
DATABASE = "prefect.db"  # Prefect's default database, where PREFECT_HOME is


def _template() -> Path:
    import prefect

    from toolkg.paths import cache_dir

    return cache_dir() / "prefect" / prefect.__version__ / DATABASE


def _uses_default_database(home: Path) -> bool:
    """Only Prefect's default SQLite file under PREFECT_HOME is seeded (never a configured database)."""
    from prefect.settings import Settings

    url = Settings().server.database.connection_url
    return url is not None and url.get_secret_value() == f"sqlite+aiosqlite:///{home / DATABASE}"


def _seed_database(home: Path) -> bool:
    """Copy the kept database into a new home; False when there is none (or it cannot be copied)."""
    try:
        template = _template()
        if not template.is_file() or not _uses_default_database(home):
            return False
        tmp = home / f".{DATABASE}.{os.getpid()}"
        shutil.copyfile(template, tmp)
        os.replace(tmp, home / DATABASE)
        return True
    except OSError:
        return False  # the server then creates its database as Prefect does


def _keep_template(home: Path) -> None:
    """Keep the database a server just created, for the next new home (first one wins; failures ignored)."""
    import sqlite3

    try:
        template = _template()
        if template.exists() or not _uses_default_database(home):
            return
        template.parent.mkdir(parents=True, exist_ok=True)
        tmp = template.with_name(f".{DATABASE}.{os.getpid()}")
        with (
            contextlib.closing(sqlite3.connect(home / DATABASE)) as source,
            contextlib.closing(sqlite3.connect(tmp)) as copy,
        ):
            source.backup(copy)
        os.replace(tmp, template)
    except (OSError, sqlite3.Error):
        pass


def take_lease(home: Path) -> None:
    """A shared lock on the lease file, held until this process exits (the kernel drops it, even on -9)."""
    global _lease
    if _lease is not None:
        return
    fd = os.open(home / LEASE_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_SH)
    _lease = fd


def release_lease() -> None:
    global _lease
    if _lease is not None:
        os.close(_lease)
        _lease = None


def _reusable(home: Path, state: dict, startup: float) -> bool:
    """The server the state names runs and answers; otherwise it is stopped and its state cleared."""
    import prefect

    pid, url = state.get("pid"), state.get("url")
    if not isinstance(pid, int) or not isinstance(url, str) or not (_alive(pid) and _is_server(pid)):
        clear_state(home, None)  # gone (a pid in an old state file may belong to anything by now)
        return False
    # Not answering yet: still starting (its client was killed while waiting) or busy; give it the start-up time.
    if _healthy(url) or _wait_healthy(url, pid, startup):
        ours = state.get("prefect") == prefect.__version__ and state.get("guard") == GUARD
        if ours and state.get("auth") == auth_digest(api_auth_string()):
            return True
        if in_use(home, besides_me=True):
            if ours:  # the same toolkg, another user's or config folder's key: it would refuse every request
                raise LocalServerError(
                    f"the shared local Prefect server under {home} is in use with another key than this "
                    f"user's (another TOOLKG_CONFIG_DIR); use another PREFECT_HOME, or {HINT}"
                )
            return True  # an older toolkg's server, still in use: replaced once it is idle
        # Another Prefect version (or an older toolkg, without the Host check and key) started it and nobody uses
        # it: replace it with ours.
    _kill(pid)
    clear_state(home, pid)
    return False


def _start(home: Path, idle: float, log: Path) -> dict:
    import prefect

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))  # the server listens on it once Prefect's app is ready
    port = sock.getsockname()[1]
    auth = api_auth_string()
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(
        PREFECT_HOME=str(home),
        PREFECT_UI_ENABLED="0",  # what Prefect's own temporary server sets: no UI, no scheduling services
        PREFECT__SERVER_EPHEMERAL="1",
        PREFECT__SERVER_FINAL="1",
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_LOGGING_LEVEL="WARNING",
        PREFECT_SERVER_LOGGING_LEVEL="WARNING",
        # Only its own origin, and only toolkg's commands: no CORS for any other origin (Prefect allows every one
        # by default), and a key on every request but the health check. local_server_process checks Host and
        # Origin in front of Prefect's app, which checks neither (DNS rebinding).
        PREFECT_SERVER_API_CORS_ALLOWED_ORIGINS=f"http://127.0.0.1:{port}",
        PREFECT_SERVER_API_CORS_ALLOWED_METHODS="GET,POST,PUT,PATCH,DELETE",
        PREFECT_SERVER_API_CORS_ALLOWED_HEADERS="Authorization,Content-Type",
        PREFECT_SERVER_API_AUTH_STRING=auth,
    )
    command = [sys.executable, "-m", SERVER_MODULE, "--fd", str(sock.fileno())]
    command += ["--home", str(home), "--idle", str(idle)]
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            pass_fds=(sock.fileno(),),
            start_new_session=True,  # no terminal signals (Ctrl-C), not killed with the client
        )
    sock.close()
    process.returncode = 0  # detached on purpose: no "still running" warning when this process exits
    url = f"http://127.0.0.1:{port}/api"
    state = {
        "pid": process.pid,
        "port": port,
        "url": url,
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "idle_seconds": idle,
        "log": str(log),
        "prefect": prefect.__version__,
        "guard": GUARD,
        "auth": auth_digest(auth),
    }
    _write_state(home, state)  # written now: a client killed while waiting leaves a server others reuse
    return state


def _healthy(url: str, timeout: float = 2.0) -> bool:
    try:
        with _NO_PROXY.open(url + "/health", timeout=timeout) as response:
            return response.status == 200
    except (OSError, ValueError):
        return False


def _wait_healthy(url: str, pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while True:
        if _healthy(url, timeout=max(0.1, min(2.0, deadline - time.monotonic()))):
            return True
        if not _alive(pid) or time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


# -- state, locks, processes -----------------------------------------------------------------------


def read_state(home: Path) -> dict | None:
    try:
        state = json.loads((home / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _write_state(home: Path, state: dict) -> None:
    tmp = home / f".{STATE_FILE}.{os.getpid()}"
    tmp.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, home / STATE_FILE)


def clear_state(home: Path, pid: int | None) -> None:
    """Remove the state file if it names ``pid`` (any server when None)."""
    state = read_state(home)
    if pid is None or (state and state.get("pid") == pid):
        with contextlib.suppress(FileNotFoundError):
            (home / STATE_FILE).unlink()


@contextlib.contextmanager
def _locked(path: Path, blocking: bool = True) -> Iterator[bool]:
    """An exclusive flock on ``path``; yields False when ``blocking`` is off and someone else holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def in_use(home: Path, besides_me: bool = False) -> bool:
    """Whether some client holds a lease (with ``besides_me``, some client other than this process)."""
    held = _lease is not None
    if besides_me and held:
        release_lease()
    try:
        with _locked(home / LEASE_FILE, blocking=False) as free:
            return not free
    except FileNotFoundError:  # no home: no lease in it
        return False
    finally:
        if besides_me and held:
            take_lease(home)


def _alive(pid: int) -> bool:
    """Running (a zombie nobody reaped yet counts as gone)."""
    with contextlib.suppress(ChildProcessError, OSError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:  # our own child: reap it
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        out = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout
        return bool(out.strip()) and not out.strip().startswith("Z")


def _is_server(pid: int) -> bool:
    """The process is one of ours (a pid in an old state file may belong to anything by now)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        command = subprocess.run(["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True).stdout
    return SERVER_MODULE in command


def _kill(pid: int, grace: float = 10.0) -> bool:
    """Stop our server process ``pid``: SIGTERM, then SIGKILL after ``grace`` seconds. False if it was gone."""
    if not _alive(pid) or not _is_server(pid):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while _alive(pid):
        if time.monotonic() >= deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + grace
        time.sleep(0.05)
    return True


# -- status and stop (toolkg prefect-server) -------------------------------------------------------


def status(home: Path) -> dict | None:
    """The running server's state plus ``in_use`` (a client holds a lease), or None when none answers."""
    state = read_state(home)
    if not state or not isinstance(state.get("url"), str) or not _healthy(state["url"]):
        return None
    return {**state, "in_use": in_use(home)}


def stop(home: Path) -> dict | None:
    """Stop the shared server (running commands lose it); its state, or None when there was none."""
    if not home.is_dir():  # no state file to name one (a server whose home was deleted stops by itself)
        return None
    with _locked(home / LOCK_FILE):
        state = read_state(home)
        if not state:
            return None
        clear_state(home, state.get("pid"))
    pid = state.get("pid")
    if not isinstance(pid, int) or not _kill(pid):
        return None
    return state


def command(action: str) -> int:
    """``toolkg prefect-server status|stop``: one line on stdout (and a note when an API is configured)."""
    home = prefect_home()
    if configured := os.environ.get("PREFECT_API_URL"):
        note = f"note: PREFECT_API_URL is set ({configured}): toolkg commands use it, not the shared local server"
        print(note, file=sys.stderr)
    if action == "stop":
        busy = in_use(home)
        state = stop(home)
        if state is None:
            print(f"no shared local Prefect server running (PREFECT_HOME {home})")
        else:
            note = "; toolkg commands were still using it" if busy else ""
            print(f"stopped the shared local Prefect server at {state['url']} (pid {state['pid']}){note}")
        return 0
    state = status(home)
    if state is None:
        print(f"no shared local Prefect server running (PREFECT_HOME {home})")
        return 0
    idle = state.get("idle_seconds", DEFAULT_IDLE)
    use = "in use" if state["in_use"] else f"idle, stops {idle:g} s after its last client"
    print(
        f"shared local Prefect server at {state['url']}: pid {state['pid']}, started {state.get('started')}, "
        f"{use}; log {state.get('log')}; stop it with 'toolkg prefect-server stop'"
    )
    return 0
