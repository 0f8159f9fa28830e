"""The MCP SDK's client over Streamable HTTP, sending the bearer token `toolkg mcp --transport http` requires."""

from __future__ import annotations

from contextlib import asynccontextmanager


@asynccontextmanager
async def bearer_client(url: str, token: str | None, mode: str = "legacy"):
    """A connected ``mcp.Client`` whose every request carries ``Authorization: Bearer token`` (none if None)."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with create_mcp_http_client(headers=headers) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client
