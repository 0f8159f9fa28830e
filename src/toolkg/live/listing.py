"""List live MCP servers with the official SDK: connect, initialize, page through ``tools/list``.

Servers are listed concurrently (at most ``concurrency`` at once), each within ``timeout`` seconds from
start to last page. Whatever goes wrong with one server (it cannot start, exits, hangs, answers with
something that is not a valid tool list) becomes a ``ListingFailure`` with a one-line reason and the
tail of its standard error; the others go on. Every secret of a server's configuration is blanked out of
all it answered (``Listing``) or failed with (``ListingFailure``) before either leaves this module
(``redaction.py``): nothing downstream sees the server's own words unredacted.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import anyio

from toolkg.live.redaction import Redactor, redact  # noqa: F401 - redact: toolsearch imports it from here
from toolkg.live.sources import ServerSpec
from toolkg.models import one_line_text

DEFAULT_TIMEOUT = 60.0
DEFAULT_CONCURRENCY = 4
MAX_PAGES = 1000  # a server handing out cursors forever is stopped here
STDERR_TAIL = 600


@dataclass
class Listing:
    """One server's answer: what its ``initialize`` and ``tools/list`` said, as JSON values."""

    spec: ServerSpec
    server_info: dict[str, Any]
    instructions: str | None
    protocol_version: str
    tools: list[dict[str, Any]]
    pages: int
    seconds: float


@dataclass
class ListingFailure:
    spec: ServerSpec
    reason: str  # one line, secrets blanked
    stderr_tail: str = ""
    seconds: float = 0.0


@dataclass
class ListingRun:
    listings: list[Listing] = field(default_factory=list)
    failures: list[ListingFailure] = field(default_factory=list)


def list_servers(
    specs: Sequence[ServerSpec],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    concurrency: int = DEFAULT_CONCURRENCY,
    on_listed: Callable[[int, int], None] | None = None,
) -> ListingRun:
    """List every server of ``specs`` (blocking; runs its own event loop). ``on_listed(done, total)`` is
    called as each server finishes, for progress."""
    return anyio.run(alist_servers, specs, timeout, concurrency, on_listed)


async def alist_servers(
    specs: Sequence[ServerSpec],
    timeout: float = DEFAULT_TIMEOUT,
    concurrency: int = DEFAULT_CONCURRENCY,
    on_listed: Callable[[int, int], None] | None = None,
) -> ListingRun:
    run = ListingRun()
    limiter = anyio.CapacityLimiter(max(1, concurrency))
    results: dict[int, Listing | ListingFailure] = {}

    async def one(position: int, spec: ServerSpec) -> None:
        async with limiter:
            results[position] = await list_one(spec, timeout)
        if on_listed is not None:
            on_listed(len(results), len(specs))

    async with anyio.create_task_group() as group:
        for position, spec in enumerate(specs):
            group.start_soon(one, position, spec)
    for position in range(len(specs)):  # in configuration order, whatever finished first
        result = results[position]
        if isinstance(result, Listing):
            run.listings.append(result)
        else:
            run.failures.append(result)
    return run


async def list_one(spec: ServerSpec, timeout: float = DEFAULT_TIMEOUT) -> Listing | ListingFailure:
    """One server listed, or why not. Never raises (but for cancellation)."""
    started = time.perf_counter()
    refusals: list[str] = []  # HTTP error statuses, which the SDK's error message does not carry
    redactor = Redactor(spec.secrets())
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        try:
            with anyio.fail_after(timeout):
                listing = await _list(spec, errlog, refusals)
            listing.seconds = round(time.perf_counter() - started, 3)
            return redacted(listing, redactor)
        except TimeoutError:
            reason = f"no answer within {timeout:g}s (server hung or too slow; raise live.timeout)"
        except Exception as exc:  # noqa: BLE001 - every failure of a stranger's server is this server's alone
            reason = error_reason(exc)
        if refusals:
            reason += f" (HTTP {', '.join(dict.fromkeys(refusals))})"
        errlog.flush()
        tail = stderr_tail(errlog.fileno(), redactor)
    return ListingFailure(
        spec=spec,
        reason=one_line_text(redactor.text(reason), 400),
        stderr_tail=tail,
        seconds=round(time.perf_counter() - started, 3),
    )


def redacted(listing: Listing, redactor: Redactor) -> Listing:
    """The listing with every secret of its server's configuration blanked out of everything the server said:
    ``serverInfo``, instructions, protocol version, and each tool whole (names, descriptions, schemas with
    their keys, annotations, ``_meta``)."""
    if not redactor:
        return listing
    listing.server_info = redactor.value(listing.server_info)
    listing.instructions = redactor.text(listing.instructions) if listing.instructions else listing.instructions
    listing.protocol_version = redactor.text(listing.protocol_version)
    listing.tools = redactor.value(listing.tools)
    return listing


def stderr_tail(fd: int, redactor: Redactor, limit: int = STDERR_TAIL) -> str:
    """The last ``limit`` characters of a server's standard error, on one line, secrets blanked.

    Redaction needs whole secrets: a window starting inside one would show its end. So a window longer than
    what is shown is read, blanked, and (when it does not start at the beginning) its first ``longest secret``
    characters dropped before the tail is cut."""
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - 4 * limit - redactor.longest)
        text = os.pread(fd, size - start, start).decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""
    text = redactor.text(text)
    if start > 0:
        text = text[redactor.longest :]
    return one_line_text(text)[-limit:].strip()


def error_reason(exc: BaseException) -> str:
    """The innermost useful message of an exception (task groups wrap the real one)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    if type(exc).__name__ == "ValidationError":  # pydantic: the server's answer is not valid MCP
        first = text.splitlines()
        text = f"invalid tools/list answer: {' '.join(first[:3])}"
    elif text == "Connection closed":
        text = "the server closed the connection before answering (did it exit? see its stderr)"
    elif isinstance(exc, FileNotFoundError):
        text = f"cannot start {exc.filename or 'the command'}: not found"
    elif isinstance(exc, PermissionError):
        text = f"cannot start {exc.filename or 'the command'}: permission denied"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def open_transport(spec: ServerSpec, errlog, stack: AsyncExitStack, refusals: list[str]):
    if spec.transport == "stdio":
        from mcp.client.stdio import StdioServerParameters, stdio_client

        parameters = StdioServerParameters(
            command=spec.command,
            args=list(spec.args),
            env=dict(spec.env) or None,
            cwd=spec.cwd,
            encoding_error_handler="replace",
        )
        return stdio_client(parameters, errlog=errlog)
    if spec.transport == "sse":
        from mcp.client.sse import sse_client

        return sse_client(spec.url, headers=dict(spec.headers) or None)
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    # the SDK leaves a client it is given open: this one closes with the listing
    client = await stack.enter_async_context(create_mcp_http_client(headers=dict(spec.headers) or None))

    async def note_refusal(response) -> None:
        if response.status_code >= 400:
            refusals.append(f"{response.status_code} {response.reason_phrase}".strip())

    client.event_hooks["response"] = [*client.event_hooks.get("response", []), note_refusal]
    return streamable_http_client(spec.url, http_client=client)


async def _list(spec: ServerSpec, errlog, refusals: list[str]) -> Listing:
    from mcp import Client

    async with AsyncExitStack() as stack:
        transport = await open_transport(spec, errlog, stack, refusals)
        # "auto": the 2026 discovery handshake where the server speaks it, else the initialize one
        client = await stack.enter_async_context(Client(transport, mode="auto", cache=None))
        tools: list[dict[str, Any]] = []
        cursor, pages, seen = None, 0, set()
        while True:
            page = await client.list_tools(cursor=cursor)
            pages += 1
            tools += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
            if cursor in seen or pages >= MAX_PAGES:
                raise RuntimeError(f"tools/list paging does not end (cursor repeated or over {MAX_PAGES} pages)")
            seen.add(cursor)
        info = client.server_info
        return Listing(
            spec=spec,
            server_info=info.model_dump(mode="json", by_alias=True, exclude_none=True) if info else {},
            instructions=client.instructions,
            protocol_version=client.protocol_version,
            tools=tools,
            pages=pages,
            seconds=0.0,
        )


def where(spec: ServerSpec) -> str:
    """How the server was reached, safe to print: 'stdio mcp-server-time' or 'http https://host/mcp'."""
    if spec.transport == "stdio":
        return f"stdio {spec.public()['command']}"
    return f"{spec.transport} {spec.public()['url']}"
