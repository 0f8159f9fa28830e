"""The shared local Prefect server's own process: ``python -m toolkg.flows.local_server_process``.

``toolkg.flows.local_server`` starts it (detached, on a socket it bound) and finds it again. It runs Prefect's
API app under uvicorn with the UI and the scheduling services off, as Prefect's own temporary server runs it,
and, in the same process, the idle watchdog: one process, so stopping it stops everything.

What it answers: requests whose Host names it (127.0.0.1, ::1, localhost) and whose Origin, when sent, does
too (``HostGuard``, in front of Prefect's app); CORS for its own origin only; and, but for ``/api/health``, only
requests carrying the key in toolkg's config folder (``local_server_key``, Prefect's auth string).

The watchdog stops the server once nobody has used it for its idle period, whatever happens to its home:

- While the state file names this server, a client is one holding a shared ``flock`` on the lease file: the
  file there now, or the one there at start (a client holding it after it was deleted or replaced still runs).
  A missing home or lease file means no lease there; the server makes no lease file anew, and writes nothing
  into a home that is gone (a temporary home being removed stays removed).
- Once the state file no longer names it (deleted, replaced by another server's, or the home deleted), no new
  client can find it, and a lease may be another server's client's: then only requests and open connections
  to it count.
- It stops under the start-up lock, after removing its state file, so a client either holds a lease on a live
  server or starts a new one. If someone else holds that lock for ``LOCK_PATIENCE`` seconds past the due
  stop, it stops without it (and leaves the state file, which clients check against a live pid).
- If the watchdog itself fails, the server stops (it would otherwise run with nothing to ever stop it).

Each stop writes a line saying why to the log (``toolkg-local-server.log``, its stdout).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import os
import signal
import socket
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from toolkg.flows.local_server import DEFAULT_IDLE, LEASE_FILE, LOCK_FILE, SERVER_MODULE, clear_state, read_state

LOCK_PATIENCE = 5.0  # seconds a due idle stop waits for the start-up lock before stopping without it


def serve(fd: int, home: Path, idle: float) -> int:
    """Prefect's API on the inherited socket ``fd`` until idle for ``idle`` seconds or sent SIGTERM."""
    server = None

    def on_signal(signum: int, frame) -> None:
        # Before it serves, SIGTERM/SIGINT end the process at once (a client gave up waiting). While it
        # serves uvicorn's own handlers take them; it raises them again once it has shut down, and then
        # this only asks for the shutdown already done, so the cleanup below runs.
        if server is None:
            raise SystemExit(128 + signum)
        server.should_exit = True

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    sock = socket.socket(fileno=fd)
    try:
        import uvicorn

        config = uvicorn.Config(
            f"{SERVER_MODULE}:guarded_app",
            factory=True,
            lifespan="on",
            log_level="warning",
            timeout_graceful_shutdown=5,
        )
        config.load()  # Prefect's app, imported here rather than in serve(), where uvicorn defers signals
        server = uvicorn.Server(config)  # from here SIGTERM/SIGINT mean a graceful shutdown

        async def main() -> None:
            watchdog = asyncio.create_task(_watch_idle(server, home, idle))
            watchdog.add_done_callback(lambda task: _stop_unless_done(server, task))
            try:
                await server.serve(sockets=[sock])
            finally:
                watchdog.cancel()

        asyncio.run(main())
        return 0 if server.started else 3
    finally:
        with _start_up_lock(home) as mine:
            if mine:
                clear_state(home, os.getpid())
        _log("stopped")


def guarded_app():
    """Prefect's API app behind ``HostGuard``: uvicorn's factory."""
    from prefect.server.api.server import create_app

    return HostGuard(create_app())


class HostGuard:
    """ASGI middleware: a request whose Host is not one of this loopback server's names, or whose Origin is
    another site's, is refused before Prefect sees it (``toolkg.netpolicy``, the policy of ``toolkg serve``).

    Prefect checks neither: a page on evil.example that re-points its name at 127.0.0.1 (DNS rebinding) would
    otherwise read and write the API as same-origin. A refused HTTP request gets 403 and one line; a refused
    WebSocket (Prefect's event streams) is closed before it is accepted, which the server answers with 403."""

    def __init__(self, app) -> None:
        from toolkg.netpolicy import HostPolicy

        self.app = app
        self.policy = HostPolicy.for_bind("127.0.0.1")

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = [(name.lower(), value.decode("latin-1")) for name, value in scope.get("headers") or ()]
        origins = [value for name, value in headers if name == b"origin"]
        refusal = self.policy.refusal([value for name, value in headers if name == b"host"], origins)
        if refusal is None and origins and not origins[0].strip().endswith(f":{(scope.get('server') or ('', 0))[1]}"):
            # netpolicy leaves the port out (a proxy may change it); here no proxy stands between: a page another
            # local server serves (another port, another origin) is as foreign as any site
            refusal = f"cross-site request from {origins[0][:100]!r} refused (only this server's own origin)"
        if refusal is None:
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":
            return await send({"type": "websocket.close", "code": 1008})
        body = (refusal + "\n").encode()
        await send(
            {
                "type": "http.response.start",
                "status": 403,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _stop_unless_done(server, watchdog: asyncio.Task) -> None:
    """Fail-safe: a watchdog that ends before the server was told to stop (it raised) stops the server."""
    if watchdog.cancelled() or server.should_exit:
        return
    server.should_exit = True
    error = watchdog.exception()
    _log(f"idle watchdog failed ({type(error).__name__}: {error}): stopping" if error else "idle watchdog ended")


async def _watch_idle(server, home: Path, idle: float) -> None:
    """Stop the server once no client has used it for ``idle`` seconds."""
    while not server.started:
        await asyncio.sleep(0.1)
    _log(f"serving on {server.servers[0].sockets[0].getsockname()}, idle stop after {idle:g} s")
    clients = Clients(home, server.server_state)
    interval = min(1.0, max(0.1, idle / 10))
    last_busy = time.monotonic()
    lock_wanted = None  # when the stop was first due and the start-up lock was someone else's
    while not server.should_exit:
        await asyncio.sleep(interval)
        if clients.busy():
            last_busy, lock_wanted = time.monotonic(), None
            continue
        if time.monotonic() - last_busy < idle:
            continue
        orphaned = clients.orphaned()  # before the stop clears the state file
        how = "stopping"
        with _start_up_lock(home) as mine:
            if mine and clients.busy():  # a client took a lease since: it is looking for this server
                continue
            if mine:
                clear_state(home, os.getpid())  # from now on clients start a new server
            elif mine is False:  # (None: the home is gone, and with it every file to clear)
                lock_wanted = lock_wanted or time.monotonic()
                if time.monotonic() - lock_wanted < LOCK_PATIENCE:
                    continue
                how = f"stopping without the start-up lock (held elsewhere for {LOCK_PATIENCE:g} s)"
            server.should_exit = True
        _log(f"idle for {idle:g} s{f' (no request; {orphaned})' if orphaned else ''}: {how}")


class Clients:
    """Whether anyone still uses this server (see the module's docstring)."""

    def __init__(self, home: Path, server_state) -> None:
        self.home = home
        self.server_state = server_state  # uvicorn's: requests served, open connections
        self.requests = server_state.total_requests
        self.lease = _open(home / LEASE_FILE, create=True)  # the lease file as it is now, kept open

    def busy(self) -> bool:
        if self.orphaned():
            return self._requested()
        return self._lease_held()

    def orphaned(self) -> str:
        """Why no client can find this server any more; empty while the state file names it."""
        if not self.home.is_dir():
            return "its home is gone"
        state = read_state(self.home)
        if state is None:
            return "its state file is gone"
        if state.get("pid") != os.getpid():
            return f"its state file names another server (pid {state.get('pid')})"
        return ""

    def _requested(self) -> bool:
        """A request since the last look, or a connection open (a client's event stream stays open)."""
        seen, self.requests = self.requests, self.server_state.total_requests
        return self.requests != seen or bool(self.server_state.connections)

    def _lease_held(self) -> bool:
        if self.lease is not None and _flocked(self.lease):
            return True
        current = _open(self.home / LEASE_FILE, create=False)
        if current is None:
            return False
        try:
            if self.lease is not None and os.path.samestat(os.fstat(current), os.fstat(self.lease)):
                return False  # the same file, looked at already
            return _flocked(current)
        finally:
            os.close(current)


def _open(path: Path, create: bool) -> int | None:
    """A descriptor on ``path``, or None when it (or its folder) is gone; other errors are the caller's."""
    try:
        return os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o600)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _flocked(fd: int) -> bool:
    """Someone else holds a flock on the file: ours cannot be exclusive."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    fcntl.flock(fd, fcntl.LOCK_UN)
    return False


@contextlib.contextmanager
def _start_up_lock(home: Path) -> Iterator[bool | None]:
    """The start-up lock, without waiting: True held, False someone else holds it, None the home is gone."""
    fd = _open(home / LOCK_FILE, create=True)
    if fd is None:
        yield None
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def _log(line: str) -> None:
    """A line on stdout, the server's log; a log that cannot be written never stops the stop."""
    with contextlib.suppress(OSError, ValueError):
        print(f"{datetime.now(UTC).isoformat(timespec='seconds')} {line}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {SERVER_MODULE}", description="toolkg starts it; not by hand")
    parser.add_argument("--fd", type=int, required=True, help="a bound loopback socket to listen on")
    parser.add_argument("--home", type=Path, required=True, help="PREFECT_HOME: the state, lock and lease files")
    parser.add_argument("--idle", type=float, default=DEFAULT_IDLE, help="seconds without clients before stopping")
    args = parser.parse_args(argv)
    return serve(args.fd, args.home, args.idle)


if __name__ == "__main__":
    sys.exit(main())
