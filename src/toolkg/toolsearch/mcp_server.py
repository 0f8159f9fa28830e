"""``toolkg mcp``: the graph served to agents as an MCP server (stdio or Streamable HTTP).

An agent facing thousands of tools loads only this server's five tools, searches for the few its task
needs, learns which to call first, and calls them through ``call_tool`` (off unless ``--allow-call``:
``calls.py``). Every answer comes from the store's published snapshot (``ToolSearch``), so builds can run
beside the server.
"""

from __future__ import annotations

import inspect
import os
import signal
import socket
import threading
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio
from mcp.types import CallToolResult  # at module level: the SDK evaluates call_tool's annotations here
from pydantic import Field, ValidationError

from toolkg import __version__
from toolkg.display import one_line
from toolkg.errors import ToolkgError
from toolkg.netpolicy import HostPolicy
from toolkg.toolsearch.auth import Tokens, caller_scope
from toolkg.toolsearch.calls import CallPolicy, CallSettings, ToolCaller
from toolkg.toolsearch.service import MAX_K, ToolSearch
from toolkg.toolsearch.trust import TrustPolicy

INSTRUCTIONS = (
    "A knowledge graph of the tools available in this catalog (MCP servers, OpenAPI operations, functions). "
    "Call search_tools with what the task needs done (and its steps, when it has several) to get the few tools "
    "that serve it, each with its input schema and the tools to call first. get_tool and tool_dependencies "
    "look one tool up; sparql answers anything else from the graph (read-only). call_tool calls a tool you "
    "found, through this connection, when this server allows calls."
)

_DEFERRED = (signal.SIGINT, signal.SIGTERM)
T = TypeVar("T")  # what a tool's worker-thread method returns
_READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}


def make_mcp_server(search: ToolSearch, caller: ToolCaller | None = None, *, scoped: bool = False):
    """An ``MCPServer`` whose tools answer from ``search``; ``call_tool`` calls through ``caller`` (without
    one, it answers that calls are off). ``scoped``: every request carries a token whose scope (set by
    ``http_gate``) limits ``call_tool`` further."""
    from mcp.server import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    caller = caller or ToolCaller(search)

    async def answer(method: Callable[..., T], *args: Any) -> T:
        """``method`` in a worker thread; toolkg's one-line errors become the tool's error message."""
        try:
            return await anyio.to_thread.run_sync(method, *args)
        except ToolkgError as exc:
            raise ToolError(one_line(str(exc))) from None

    def calls_open() -> bool:
        """Whether this request may call tools at all: --allow-call, and over HTTP a token with the call scope."""
        if not caller.policy.enabled:
            return False
        scope = caller_scope.get()
        return not scoped or (scope is not None and scope.calls)

    def callable_marked(found: dict[str, Any]) -> dict[str, Any]:
        """``found``'s tools with ``callable`` set: live, and this server and the caller's token would call it."""
        for entry in found.get("tools", [found] if "id" in found else []):
            entry["callable"] = bool(entry.get("live")) and calls_open() and _may_call(caller, entry, scoped)
        return found

    class Server(MCPServer):
        """The SDK's server, with argument errors in one line and ``call_tool`` listed only to whoever may call."""

        async def list_tools(self):
            listed = await super().list_tools()
            return listed if calls_open() else [t for t in listed if t.name != "call_tool"]

        async def call_tool(self, name, arguments, context=None):
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                if isinstance(exc.__cause__, ValidationError):
                    raise ToolError(argument_error(name, exc.__cause__)) from None
                raise

    server = Server("toolkg", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    annotations = ToolAnnotations(**{"title": None, **_READ_ONLY})

    def tool(title: str):
        """``server.tool``, read-only, described by the function's docstring as ``description`` makes it."""

        def register(fn):
            update = {"title": title}
            read_only = annotations.model_copy(update=update)
            return server.tool(annotations=read_only, description=description(fn.__doc__))(fn)

        return register

    @tool("Search tools")
    async def search_tools(
        query: Annotated[
            str, Field(description="what the task needs done, in plain words; or tool names (server::tool, select:A,B)")
        ],
        k: Annotated[int, Field(ge=1, le=MAX_K, description="how many tools to return")] = 5,
        steps: Annotated[
            list[str] | None, Field(description="the task's sub-steps, when it has several (each is searched)")
        ] = None,
        min_score: Annotated[
            float | None,
            Field(ge=0, le=1, description="answer no tool scoring below this (default: the calibrated threshold)"),
        ] = None,
    ) -> dict[str, Any]:
        """Find the tools that can do a task. Returns the best tools first, each with its server, description,
        input schema, a relevance score, why it matched, and `call_first`: the tools whose output it needs
        (for example a login that gives the token it takes). Call those first, but one marked `conditional`
        only when its `condition` holds (it changes state). `callable` says whether call_tool can call the
        tool here. Tools named in the query (`server::tool`, `mcp__server__tool`, `select:A,B`, or a name with
        a typo) come first. When no tool serves the task, `abstain` is true, `tools` is empty and `reason`
        says why: do not force a weak match. Pinned tools come with every answer, marked `pinned`."""
        found = await answer(search.search_tools, query, k, steps, min_score)
        return {"snapshot": search.snapshot, **callable_marked(found)}

    @tool("Get a tool")
    async def get_tool(
        id: Annotated[str, Field(description="a tool id 'server::tool' as search_tools returns it, or a tool name")],
    ) -> dict[str, Any]:
        """Look one tool up: its server, description, input schema, annotations, the tools to call before it
        (`call_first`) and the tools that need it (`needed_by`)."""
        return callable_marked(await answer(search.get_tool, id))

    @tool("Tool dependencies")
    async def tool_dependencies(
        id: Annotated[str, Field(description="a tool id 'server::tool', or a tool name")],
    ) -> dict[str, Any]:
        """Everything a tool depends on, transitively: each prerequisite with the kind of dependency, the
        parameter it feeds, a confidence (1.0 when the catalog declares it), depth and whether it is
        `conditional` (call it only when its `condition` holds); `order` lists the tools in an order to call
        them, a conditional step after the check it follows, the asked tool last."""
        return await answer(search.tool_dependencies, id)

    @tool("SPARQL query")
    async def sparql(
        query: Annotated[str, Field(description="a SPARQL 1.1 SELECT, ASK, CONSTRUCT or DESCRIBE query")],
    ) -> dict[str, Any]:
        """Query the tool graph with SPARQL (read-only; updates are refused). Prefixes tk:, rdfs:, dcterms:,
        prov:, skos: are predeclared; tools are tk:Tool with tk:identifier, tk:name, dcterms:description,
        tk:hasParameter, tk:ownedBy and tk:dependsOn. Results are capped in rows and stopped after a timeout."""
        return await answer(search.sparql, query)

    call_annotations = ToolAnnotations(
        title="Call a tool", readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=True
    )

    @server.tool(annotations=call_annotations, description=_call_tool_description(caller.policy))
    async def call_tool(
        id: Annotated[str, Field(description="the tool's id 'server::tool', as search_tools returns it")],
        arguments: Annotated[
            dict[str, Any] | None, Field(description="the tool's arguments, as its input_schema describes them")
        ] = None,
    ) -> CallToolResult:
        if scoped:
            id = await answer(_within_scope, search, id)
        try:
            return await caller.call(id, arguments)
        except ToolkgError as exc:
            raise ToolError(one_line(str(exc))) from None

    return server


def _may_call(caller: ToolCaller, entry: dict[str, Any], scoped: bool) -> bool:
    """Whether ``call_tool`` would be let through for this tool by the server's policy and the caller's token
    (the arguments and the server's reachability are checked at call time)."""
    if caller.policy.refusal(entry["id"], entry["server"], entry.get("annotations") or {}):
        return False
    scope = caller_scope.get()
    return not scoped or (scope is not None and scope.call_refusal(entry["id"], entry["server"]) is None)


def argument_error(tool: str, error: ValidationError) -> str:
    """A tool's arguments that do not fit its input schema, in one line (pydantic's own message spans lines
    and ends each with a documentation URL).

    >>> from pydantic import BaseModel, Field
    >>> class Args(BaseModel):
    ...     k: int = Field(ge=1, le=50)
    >>> try:
    ...     Args(k=100)
    ... except ValidationError as exc:
    ...     print(argument_error("search_tools", exc))
    search_tools: argument 'k': input should be less than or equal to 50 (got 100)
    """
    parts = []
    for problem in error.errors(include_url=False):
        where = ".".join(str(part) for part in problem["loc"]) or "arguments"
        message = problem["msg"][:1].lower() + problem["msg"][1:]
        given = problem.get("input")
        shown = f" (got {one_line(repr(given), 40)})" if isinstance(given, int | float | str | bool) else ""
        parts.append(f"argument '{where}': {message}{shown}")
    return one_line(f"{tool}: " + "; ".join(parts))


def _within_scope(search: ToolSearch, tool: str) -> str:
    """The tool's id, resolved once so the call made is the one checked; a refusal if the caller's token may
    not call it. No scope here (it is set for every authenticated request) refuses: never call unchecked."""
    from toolkg.toolsearch.calls import CallRefused

    scope = caller_scope.get()
    if scope is None:
        raise CallRefused("this request carries no token scope, so no call is made")
    if scope.calls and not scope.servers:
        return tool
    record = search.get_tool(tool) if scope.calls else {"id": tool, "server": ""}
    if refusal := scope.call_refusal(record["id"], record["server"]):
        raise CallRefused(refusal)
    return record["id"]


def description(docstring: str | None) -> str:
    r"""A tool's description from its docstring: each paragraph on one line. The SDK would send the docstring
    as written, the source's indentation and line wraps included, to every agent that lists the tools.

    >>> description("One line,\n        wrapped.\n\n        Another.")
    'One line, wrapped.\n\nAnother.'
    """
    paragraphs = inspect.cleandoc(docstring or "").split("\n\n")
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in paragraphs)


def _call_tool_description(policy: CallPolicy) -> str:
    return (
        "Call a tool of the catalog through this connection: its server runs it and its result comes back "
        "unchanged. Search first (search_tools) to find the tool and its input_schema, and call the tools in "
        "its call_first before it. Arguments are checked against the input schema before the call. " + policy.describe()
    )


def serve(
    store_dir: str | Path,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 7879,
    *,
    sparql_timeout: float = 10.0,
    max_rows: int = 1000,
    sparql_memory_mib: int = 1024,
    policy: CallPolicy | None = None,
    call_settings: CallSettings | None = None,
    pinned: tuple[str, ...] = (),
    min_score: float | None = None,
    trust: TrustPolicy | None = None,
    hosts: HostPolicy | None = None,
    tokens: Tokens | None = None,
    sock: socket.socket | None = None,
) -> None:
    """Run the MCP server until stopped (stdio: until the client closes the pipe). Leaving closes every
    session ``call_tool`` opened (their server processes stop). ``pinned`` tools come with every search;
    ``min_score`` replaces the calibrated abstention threshold. Over HTTP, requests must name one of ``hosts``
    (default: those of the bind) and carry one of ``tokens`` (None: no authentication, --no-auth); the server
    listens on ``sock`` when given (bound to host:port already), else binds host:port itself."""
    opened = ToolSearch(
        store_dir,
        sparql_timeout=sparql_timeout,
        max_rows=max_rows,
        sparql_memory_mib=sparql_memory_mib,
        pinned=pinned,
        min_score=min_score,
        trust=trust,
    )
    with opened as search:
        caller = ToolCaller(search, policy, call_settings)
        try:
            server = make_mcp_server(search, caller, scoped=transport == "http" and tokens is not None)
            if transport == "stdio":
                with _closing_on_sigterm(caller):
                    server.run("stdio")
                return
            from mcp.server.transport_security import TransportSecuritySettings

            from toolkg.toolsearch import uvicorn_limits
            from toolkg.toolsearch.http_gate import McpHttpGate

            # The SDK's own Host check is off: it holds only on the binds it knows for local (none on 127.0.0.2
            # or 0.0.0.0, issue 40); the gate checks every bind with the policy toolkg serve uses.
            unchecked = TransportSecuritySettings(enable_dns_rebinding_protection=False)
            app = server.streamable_http_app(host=host, transport_security=unchecked)
            gate = McpHttpGate(app, hosts or HostPolicy.for_bind(host), tokens)
            uvicorn_limits.run(gate, host, port, sock)  # uvicorn, with deadlines and caps against slow clients
        finally:
            with _signals_deferred():  # a client's SIGTERM while its servers stop must not cut that short
                caller.close()


@contextmanager
def _closing_on_sigterm(caller: ToolCaller):
    """SIGTERM while serving over stdio: close the sessions (their servers stop), then die of it as before.

    Unwinding instead would wait for the SDK's thread blocked reading standard input, which the client that
    sent the signal may hold open."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one does not cut the closing short
        try:
            caller.close()
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def _signals_deferred():
    """SIGINT and SIGTERM noted, not acted on, inside the block; acted on (KeyboardInterrupt) after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    previous = {s: signal.signal(s, lambda signum, frame: arrived.append(signum)) for s in _DEFERRED}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if arrived:
        raise KeyboardInterrupt
