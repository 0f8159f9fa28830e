"""``toolkg mcp``: the graph served to agents as an MCP server (stdio or Streamable HTTP), read-only.

An agent facing thousands of tools loads only this server's four tools, searches for the few its task
needs, and learns which to call first. Every answer comes from the store's published snapshot
(``ToolSearch``), so builds can run beside the server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import anyio
from pydantic import Field

from toolkg import __version__
from toolkg.display import one_line
from toolkg.errors import ToolkgError
from toolkg.toolsearch.service import MAX_K, ToolSearch

INSTRUCTIONS = (
    "A knowledge graph of the tools available in this catalog (MCP servers, OpenAPI operations, functions). "
    "Call search_tools with what the task needs done (and its steps, when it has several) to get the few tools "
    "that serve it, each with its input schema and the tools to call first. get_tool and tool_dependencies "
    "look one tool up; sparql answers anything else from the graph (read-only)."
)

_READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}


def make_mcp_server(search: ToolSearch):
    """An ``MCPServer`` whose tools answer from ``search``."""
    from mcp.server import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    async def answer(method, *args) -> dict[str, Any]:
        """``method`` in a worker thread; toolkg's one-line errors become the tool's error message."""
        try:
            return await anyio.to_thread.run_sync(method, *args)
        except ToolkgError as exc:
            raise ToolError(one_line(str(exc))) from None

    server = MCPServer("toolkg", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    annotations = ToolAnnotations(**{"title": None, **_READ_ONLY})

    @server.tool(annotations=annotations.model_copy(update={"title": "Search tools"}))
    async def search_tools(
        query: Annotated[str, Field(description="what the task needs done, in plain words")],
        k: Annotated[int, Field(ge=1, le=MAX_K, description="how many tools to return")] = 5,
        steps: Annotated[
            list[str] | None, Field(description="the task's sub-steps, when it has several (each is searched)")
        ] = None,
    ) -> dict[str, Any]:
        """Find the tools that can do a task. Returns the best tools first, each with its server, description,
        input schema, a relevance score, why it matched, and `call_first`: the tools whose output it needs
        (for example a login that gives the token it takes). Call those first."""
        tools = await answer(search.search_tools, query, k, steps)
        return {"snapshot": search.snapshot, "tools": tools}

    @server.tool(annotations=annotations.model_copy(update={"title": "Get a tool"}))
    async def get_tool(
        id: Annotated[str, Field(description="a tool id 'server::tool' as search_tools returns it, or a tool name")],
    ) -> dict[str, Any]:
        """Look one tool up: its server, description, input schema, annotations, the tools to call before it
        (`call_first`) and the tools that need it (`needed_by`)."""
        return await answer(search.get_tool, id)

    @server.tool(annotations=annotations.model_copy(update={"title": "Tool dependencies"}))
    async def tool_dependencies(
        id: Annotated[str, Field(description="a tool id 'server::tool', or a tool name")],
    ) -> dict[str, Any]:
        """Everything a tool depends on, transitively: each prerequisite with the kind of dependency, the
        parameter it feeds, a confidence (1.0 when the catalog declares it) and depth; `order` lists the
        tools in an order to call them, the asked tool last."""
        return await answer(search.tool_dependencies, id)

    @server.tool(annotations=annotations.model_copy(update={"title": "SPARQL query"}))
    async def sparql(
        query: Annotated[str, Field(description="a SPARQL 1.1 SELECT, ASK, CONSTRUCT or DESCRIBE query")],
    ) -> dict[str, Any]:
        """Query the tool graph with SPARQL (read-only; updates are refused). Prefixes tk:, rdfs:, dcterms:,
        prov:, skos: are predeclared; tools are tk:Tool with tk:identifier, tk:name, dcterms:description,
        tk:hasParameter, tk:ownedBy and tk:dependsOn. Results are capped in rows and stopped after a timeout."""
        return await answer(search.sparql, query)

    return server


def serve(
    store_dir: str | Path,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 7879,
    *,
    sparql_timeout: float = 10.0,
    max_rows: int = 1000,
) -> None:
    """Run the MCP server until stopped (stdio: until the client closes the pipe)."""
    with ToolSearch(store_dir, sparql_timeout=sparql_timeout, max_rows=max_rows) as search:
        server = make_mcp_server(search)
        if transport == "stdio":
            server.run("stdio")
            return
        import uvicorn

        app = server.streamable_http_app(host=host)
        uvicorn.run(app, host=host, port=port, log_level="warning")
