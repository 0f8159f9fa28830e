"""A small MCP server of our own for the live-ingestion tests, built on the SDK's MCPServer.

Its tools come from a JSON file (``--tools FILE``: a list of {name, description, inputSchema}), read on
every ``tools/list``, so a test can change them between two listings. It pages its list ``--page-size``
tools at a time. ``--mode`` makes it misbehave: ``crash`` exits at start with a message on stderr,
``hang`` never answers ``tools/list``, ``invalid`` (HTTP only) answers with a tool whose inputSchema is
not an object.
Over HTTP, ``TOY_REQUIRED_TOKEN`` in its environment makes it refuse requests without
``Authorization: Bearer <token>``; ``--path-prefix /s/KEY`` serves it at ``/s/KEY/mcp`` only (a hosted server's
key in its path); ``TOY_HEADER_LOG=FILE`` appends every request's headers to FILE (one JSON object a line), so a
test sees what a client sent.

Its tools answer calls with what they were called with (``--calls FILE`` logs each call there).

    python toy_server.py --tools tools.json [--transport stdio|http --port N] [--mode ok|crash|hang|invalid]
                         [--calls FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import anyio
from mcp.server import MCPServer
from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool


class PagingServer(MCPServer):
    def __init__(self, tools_file: Path, page_size: int, mode: str, calls: Path | None = None) -> None:
        super().__init__("toy-bookings", version="1.0.0", instructions="Book trips: log in, search, then book.")
        self.tools_file, self.page_size, self.mode, self.calls = tools_file, page_size, mode, calls

    async def _handle_call_tool(self, ctx, params) -> CallToolResult:
        """Any tool the file lists answers with what it was called with (and, with ``--calls FILE``, appends
        that to the file: a test sees which calls reached the server)."""
        entries = json.loads(self.tools_file.read_text(encoding="utf-8"))
        if params.name not in [e.get("name") for e in entries]:
            return CallToolResult(content=[TextContent(type="text", text=f"no tool {params.name}")], is_error=True)
        said = f"called {params.name} with {json.dumps(params.arguments or {}, sort_keys=True)}"
        if self.calls is not None:
            with self.calls.open("a", encoding="utf-8") as log:
                log.write(said + "\n")
        return CallToolResult(content=[TextContent(type="text", text=said)])

    async def _handle_list_tools(self, ctx, params) -> ListToolsResult:
        if self.mode == "hang":
            await anyio.sleep(3600)
        entries = json.loads(self.tools_file.read_text(encoding="utf-8"))
        start = int(params.cursor) if params is not None and params.cursor else 0
        page = entries[start : start + self.page_size]
        tools = [Tool.model_validate(entry) for entry in page]
        following = start + self.page_size
        return ListToolsResult(tools=tools, next_cursor=str(following) if following < len(entries) else None)


def invalid_app():
    """Streamable HTTP without the SDK (whose server checks its own answers): a JSON-RPC endpoint that
    initializes properly, then lists a tool whose inputSchema is a string, which no client can accept."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def endpoint(request: Request) -> Response:
        message = await request.json()
        if "id" not in message:  # a notification
            return Response(status_code=202)
        if message["method"] == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "toy-invalid", "version": "0.0.1"},
            }
        elif message["method"] == "tools/list":
            result = {"tools": [{"name": "broken", "inputSchema": "not a schema"}]}
        else:
            return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}})
        return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "result": result})

    return Starlette(routes=[Route("/mcp", endpoint, methods=["POST"])])


def _guarded(app, token: str):
    """An ASGI wrapper refusing HTTP requests without the bearer token."""

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization", b"").decode() != f"Bearer {token}":
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"missing or wrong token"})
                return
        await app(scope, receive, send)

    return guarded


def _prefixed(app, prefix: str):
    """Only under ``prefix`` (the rest is 404), with it stripped for the app."""

    async def routed(scope, receive, send):
        if scope["type"] == "http":
            if not scope["path"].startswith(prefix + "/"):
                await send({"type": "http.response.start", "status": 404, "headers": []})
                await send({"type": "http.response.body", "body": b"not here"})
                return
            scope = {**{k: v for k, v in scope.items() if k != "raw_path"}, "path": scope["path"][len(prefix) :]}
        await app(scope, receive, send)

    return routed


def _logging(app, log: Path):
    async def logged(scope, receive, send):
        if scope["type"] == "http":
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers") or ()}
            with log.open("a", encoding="utf-8") as out:
                out.write(json.dumps(headers) + "\n")
        await app(scope, receive, send)

    return logged


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", required=True, type=Path)
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--page-size", type=int, default=2)
    parser.add_argument("--mode", choices=("ok", "crash", "hang", "invalid"), default="ok")
    parser.add_argument("--calls", type=Path, default=None)
    parser.add_argument("--path-prefix", default="")
    args = parser.parse_args()
    if args.mode == "crash":
        print("toy-bookings: fatal: cannot open the bookings database", file=sys.stderr)
        sys.exit(3)
    if args.mode == "invalid":
        import uvicorn

        uvicorn.run(invalid_app(), host="127.0.0.1", port=args.port, log_level="warning")
        return
    server = PagingServer(args.tools, args.page_size, args.mode, args.calls)
    if args.transport == "stdio":
        server.run("stdio")
        return
    import uvicorn

    app = server.streamable_http_app()
    token = os.environ.get("TOY_REQUIRED_TOKEN")
    app = _guarded(app, token) if token else app
    app = _prefixed(app, args.path_prefix.rstrip("/")) if args.path_prefix else app
    if os.environ.get("TOY_HEADER_LOG"):
        app = _logging(app, Path(os.environ["TOY_HEADER_LOG"]))
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
