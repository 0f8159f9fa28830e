"""Client sessions to live MCP servers for ``call_tool``: one per server, opened on first use, kept open,
closed when idle; each call under a timeout, a few at a time per server.

The sessions live on an event loop of their own, in a thread (an anyio blocking portal): a session's
transport (a child process, an HTTP client) is tied to the task that opened it, and this way that task
outlives any one request of ``toolkg mcp`` whatever transport serves the agent. The agent's side
submits a call and awaits its future.

A call that times out, or whose server closes the connection, discards that session (closing it stops
its process: stdin closed, then the process tree killed) and fails in one line; the next call opens a
fresh one. Every message is redacted with the server's secrets (its env and header values).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import tempfile
import threading
from contextlib import AsyncExitStack, ExitStack
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup
from anyio.from_thread import BlockingPortal

from toolkg.errors import RequestError, ToolkgError
from toolkg.live.listing import error_reason, open_transport, redact, stderr_tail
from toolkg.live.redaction import Redactor
from toolkg.live.sources import ServerSpec
from toolkg.models import one_line_text

DEFAULT_CALL_TIMEOUT = 60.0
DEFAULT_IDLE = 300.0
DEFAULT_PER_SERVER = 4
CLOSE_GRACE = 10.0  # closing the pool waits this long for sessions to stop (a stdio server gets ~2 s, then a kill)
STDERR_TAIL = 300
STDERR_KEPT = 1 << 20


class CallFailed(ToolkgError):
    """The owning server did not answer a call (it hung, exited, refused the connection): one line."""


class DefinitionChanged(RequestError):
    """The server now lists the tool otherwise than the build audited it (a rug pull): the call is refused."""


# The parts of a listed tool an agent reads or the server acts on: a change in any is a change to what was audited.
DEFINITION_KEYS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
MAX_LIST_PAGES = 100


@dataclass(frozen=True)
class CallPlan:
    """One checked call: which server to reach and how, the tool's own name there, and the definition the build
    listed and audited (its live snapshot's entry; None when there is none to compare with)."""

    tool_id: str
    spec: ServerSpec
    tool_name: str
    arguments: dict[str, Any]
    audited: dict[str, Any] | None = None


def definition_changes(audited: dict[str, Any], listed: dict[str, Any] | None) -> list[str]:
    """The parts of the tool's definition that differ between the audited listing and ``listed`` (the session's
    own ``tools/list`` now, redacted as the snapshot was; None: the server no longer lists the tool)."""
    if listed is None:
        return ["the tool is no longer listed"]
    return [key for key in DEFINITION_KEYS if audited.get(key) != listed.get(key)]


@dataclass(eq=False)
class _Session:
    spec: ServerSpec
    client: Any = None
    stop: anyio.Event = field(default_factory=anyio.Event)
    stopped: anyio.Event = field(default_factory=anyio.Event)
    in_flight: int = 0
    last_used: float = 0.0
    errlog: Any = None
    refusals: list[str] = field(default_factory=list)

    def stderr_tail(self) -> str:
        """The end of the server's standard error, read without moving the offset the server writes at."""
        if self.errlog is None or self.errlog.closed:
            return ""
        return stderr_tail(self.errlog.fileno(), Redactor(self.spec.secrets()), STDERR_TAIL)

    def trim_stderr(self) -> None:
        """Start the server's standard error file over once it passes ``STDERR_KEPT``: a chatty server
        kept open for hours does not fill the disk (only its last lines are ever shown)."""
        if self.errlog is None or self.errlog.closed:
            return
        try:
            fd = self.errlog.fileno()
            if os.fstat(fd).st_size > STDERR_KEPT:
                os.ftruncate(fd, 0)
                os.lseek(fd, 0, os.SEEK_SET)  # the offset the server writes at, shared with it
        except OSError:
            pass


async def wait_for(future: concurrent.futures.Future):
    """The result of a pool's future, awaited on the caller's event loop; cancelling the await cancels the call."""
    try:
        import sniffio

        on_asyncio = sniffio.current_async_library() == "asyncio"
    except Exception:  # noqa: BLE001 - no library detected: wait in a worker thread
        on_asyncio = False
    if on_asyncio:
        return await asyncio.wrap_future(future)
    return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)


class SessionPool:
    """Sessions by server id; see the module docstring. ``submit`` and ``close`` from any thread."""

    def __init__(
        self,
        *,
        timeout: float = DEFAULT_CALL_TIMEOUT,
        idle: float = DEFAULT_IDLE,
        per_server: int = DEFAULT_PER_SERVER,
    ) -> None:
        self.timeout, self.idle, self.per_server = timeout, idle, max(1, per_server)
        self._start_lock = threading.Lock()
        self._portal: BlockingPortal | None = None
        self._exits = ExitStack()
        self._main: concurrent.futures.Future | None = None
        self._closed = False
        # touched on the pool's loop only
        self._sessions: dict[str, _Session] = {}
        self._limiters: dict[str, anyio.CapacityLimiter] = {}
        self._openers: dict[str, anyio.Lock] = {}
        self._group: TaskGroup | None = None  # the loop's, while it runs
        self._closing: anyio.Event | None = None
        self.opened = 0  # sessions opened so far (tests and the benchmark read it)

    # --- the caller's side (any thread) -------------------------------------------------------

    def start(self) -> None:
        """Start the pool's loop (idempotent; called on the first call, not before)."""
        with self._start_lock:
            if self._closed:
                raise CallFailed("toolkg mcp is shutting down: no more calls")
            if self._portal is not None:
                return
            portal = self._exits.enter_context(anyio.from_thread.start_blocking_portal(name="toolkg-call-pool"))
            self._main, _ = portal.start_task(self._run, name="toolkg call sessions")
            self._portal = portal

    def submit(self, plan: CallPlan) -> concurrent.futures.Future:
        """Run ``plan`` on the pool's loop; the future gives the server's ``CallToolResult`` or raises one
        ``ToolkgError``. Cancelling the future cancels the call."""
        self.start()
        assert self._portal is not None, "start() opened it"
        return self._portal.start_task_soon(self._call, plan)

    def call_sync(self, plan: CallPlan):
        return self.submit(plan).result()

    def stats(self) -> dict[str, int]:
        """Open sessions and sessions opened so far."""
        if self._portal is None:
            return {"open": 0, "opened": 0}
        return self._portal.call(lambda: {"open": len(self._sessions), "opened": self.opened})

    def close(self) -> None:
        """Close every session (stopping their processes) and the pool's loop. Idempotent."""
        with self._start_lock:
            self._closed = True
            portal, self._portal = self._portal, None
        if portal is None:
            return
        try:
            # both set once the loop runs, which start() waited for before it set the portal
            assert self._closing is not None and self._main is not None
            portal.call(self._closing.set)
            self._main.result(timeout=CLOSE_GRACE + 5)
        except Exception:  # noqa: BLE001,S110 - closing anyway: what is left is cancelled below
            pass
        try:
            portal.call(portal.stop, True)  # calls still waiting for a turn end here, cancelled
        except RuntimeError:  # the portal stopped already
            pass
        finally:
            self._exits.close()

    # --- the pool's loop ----------------------------------------------------------------------

    async def _run(self, *, task_status=anyio.TASK_STATUS_IGNORED) -> None:
        self._closing = anyio.Event()
        async with anyio.create_task_group() as group:
            self._group = group
            task_status.started()
            await self._closing.wait()
            sessions = list(self._sessions.values())
            for session in sessions:
                session.stop.set()
            with anyio.move_on_after(CLOSE_GRACE):
                for session in sessions:
                    await session.stopped.wait()
            group.cancel_scope.cancel()

    async def _call(self, plan: CallPlan):
        server = plan.spec.id
        limiter = self._limiters.setdefault(server, anyio.CapacityLimiter(self.per_server))
        async with limiter:  # waiting for a turn does not count against the timeout
            session = None
            try:
                with anyio.fail_after(self.timeout):
                    session = await self._session(plan)
                    session.in_flight += 1
                    try:
                        if plan.audited is not None:
                            await self._check_unchanged(plan, session)
                        return await session.client.call_tool(plan.tool_name, plan.arguments)
                    finally:
                        session.in_flight -= 1
                        session.last_used = anyio.current_time()
            except TimeoutError:
                self._discard(session)
                what = "answered" if session is not None else "finished opening a session"
                raise CallFailed(
                    self._say(
                        plan,
                        f"server '{server}' has not {what} within {self.timeout:g}s (timeout: it hung or is too "
                        "slow; toolkg mcp --call-timeout sets the limit); its session was closed, the next call "
                        "opens a new one",
                        session,
                    )
                ) from None
            except ToolkgError:
                raise
            except Exception as exc:  # noqa: BLE001 - a stranger's server: every failure becomes one line
                raise self._failure(plan, exc, session) from None

    async def _check_unchanged(self, plan: CallPlan, session: _Session) -> None:
        """Refuse the call when the session's own ``tools/list`` shows the tool otherwise than the build audited it:
        a server can change a tool after it was listed (a rug pull), and the agent would call the new one."""
        listed: dict[str, Any] | None = None
        cursor, pages = None, 0
        while listed is None and pages < MAX_LIST_PAGES:
            page = await session.client.list_tools(cursor=cursor)
            pages += 1
            for tool in page.tools:
                if tool.name.strip() == plan.tool_name.strip():
                    listed = Redactor(plan.spec.secrets()).value(
                        tool.model_dump(mode="json", by_alias=True, exclude_none=True)
                    )
            cursor = page.next_cursor
            if not cursor:
                break
        changed = definition_changes(plan.audited or {}, listed)
        if changed:
            raise DefinitionChanged(
                one_line_text(
                    f"{plan.tool_id}: not called: its server now lists it otherwise than the build audited it "
                    f"({', '.join(changed)} changed); rebuild the store (toolkg build) so the audit reads the new "
                    f"definition, and approve it (toolkg approve {plan.tool_id}) once a person has read it",
                    700,
                )
            )

    def _failure(self, plan: CallPlan, exc: BaseException, session: _Session | None) -> CallFailed:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        server = plan.spec.id
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        if isinstance(exc, MCPError) and exc.code != CONNECTION_CLOSED:  # it answered: the session is fine
            return CallFailed(self._say(plan, f"server '{server}' answered with an error: {exc.message}", None))
        if isinstance(exc, RuntimeError) and session is not None and session.client is not None:
            # the SDK's client rejects a result (not valid for the tool's output schema): the session is fine
            return CallFailed(self._say(plan, f"server '{server}' gave a result the MCP client rejects: {exc}", None))
        if session is None:  # it never opened (opening failures are CallFailed already)
            return CallFailed(self._say(plan, f"cannot reach server '{server}': {error_reason(exc)}", None))
        self._discard(session)
        closed = isinstance(exc, MCPError) or isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError)
        what = "closed the connection during the call (it exited?)" if closed else f"failed: {error_reason(exc)}"
        message = f"server '{server}' {what}; that session was closed, the next call opens a new one"
        return CallFailed(self._say(plan, message, session))

    @staticmethod
    def _say(plan: CallPlan, message: str, session: _Session | None) -> str:
        tail = session.stderr_tail() if session is not None else ""
        if tail:
            message += f" (server stderr: ...{tail})"
        return one_line_text(redact(f"{plan.tool_id}: {message}", plan.spec.secrets()), 700)

    async def _session(self, plan: CallPlan) -> _Session:
        """The open session to the plan's server, opened now if there is none (one opener per server)."""
        spec = plan.spec
        opener = self._openers.setdefault(spec.id, anyio.Lock())
        async with opener:
            current = self._sessions.get(spec.id)
            if current is not None and current.spec == spec and not current.stop.is_set():
                return current
            if current is not None:  # its configuration changed: a session for the new one
                self._discard(current)
            session = _Session(spec, last_used=anyio.current_time())
            assert self._group is not None, "sessions are opened on the loop, inside its task group"
            try:
                await self._group.start(self._own, session)
            except Exception as exc:  # noqa: BLE001 - it cannot start or answer: one line, with its HTTP refusals
                reason = error_reason(exc)
                if session.refusals:
                    reason += f" (HTTP {', '.join(dict.fromkeys(session.refusals))})"
                raise CallFailed(self._say(plan, f"cannot reach server '{spec.id}': {reason}", None)) from None
            self._sessions[spec.id] = session
            self.opened += 1
            return session

    def _discard(self, session: _Session | None) -> None:
        if session is None:
            return
        if self._sessions.get(session.spec.id) is session:
            del self._sessions[session.spec.id]
        session.stop.set()

    async def _own(self, session: _Session, *, task_status=anyio.TASK_STATUS_IGNORED) -> None:
        """Open ``session``, hold it until it is discarded, idle or the pool closes, then close it.

        Raised before ``started`` (the server cannot start or answer), an error reaches the opening call;
        after it, the session's calls have failed already and report it."""
        started = False
        try:
            with tempfile.TemporaryFile("w+b") as errlog:
                session.errlog = errlog
                async with AsyncExitStack() as stack:
                    from mcp import Client

                    transport = await open_transport(session.spec, errlog, stack, session.refusals)
                    session.client = await stack.enter_async_context(Client(transport, mode="auto", cache=None))
                    started = True
                    task_status.started()
                    await self._hold(session)
        except Exception:
            if not started:
                raise
        finally:
            if self._sessions.get(session.spec.id) is session:
                del self._sessions[session.spec.id]
            session.stop.set()
            session.stopped.set()

    async def _hold(self, session: _Session) -> None:
        """Until the session is to stop, or has had no call in flight for ``idle`` seconds."""
        check = max(0.05, min(self.idle / 2, 5.0))
        while not session.stop.is_set():
            with anyio.move_on_after(check):
                await session.stop.wait()
            session.trim_stderr()
            if session.in_flight == 0 and anyio.current_time() - session.last_used >= self.idle:
                self._discard(session)  # out of the pool before it closes: no call picks it up now
