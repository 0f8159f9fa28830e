"""toolkg for agents: tool search, tool lookup, dependencies and SPARQL over a store's published snapshot
(``service.ToolSearch``), served over MCP by ``toolkg mcp`` (``mcp_server.py``).

Imports are lazy: a name's module, and the retrieval stack behind it, loads when the name is first used.
"""

from __future__ import annotations

__all__ = ["ToolSearch", "make_mcp_server"]


def __getattr__(name: str):
    if name == "ToolSearch":
        from toolkg.toolsearch.service import ToolSearch

        return ToolSearch
    if name == "make_mcp_server":
        from toolkg.toolsearch.mcp_server import make_mcp_server

        return make_mcp_server
    raise AttributeError(name)
