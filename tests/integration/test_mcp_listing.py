"""What `toolkg mcp` shows an agent, read through the MCP SDK's client (in-process: the server's own listing and
answers, as JSON-RPC messages): tool descriptions without the docstrings' source indentation, and SPARQL
errors that point into the agent's query and name an undeclared prefix. Over stdio: tests/e2e/test_toolsearch_mcp.py.
"""

from __future__ import annotations

import anyio
import pytest

from tests.conftest import CASES
from toolkg.toolsearch.calls import CallPolicy, ToolCaller
from toolkg.toolsearch.mcp_server import make_mcp_server
from toolkg.toolsearch.service import ToolSearch


@pytest.fixture(scope="module")
def store(built_store):
    return built_store(CASES / "inference" / "shop.json", links=False)  # shared: read only


def _session(store, calls, caller=None):
    from mcp import Client

    search = ToolSearch(store)
    try:

        async def run():
            async with Client(make_mcp_server(search, caller and caller(search)), mode="legacy") as client:
                return await calls(client)

        return anyio.run(run)
    finally:
        search.close()


def test_tool_descriptions_are_clean_paragraphs(store):
    async def calls(client):
        return (await client.list_tools()).tools

    # call_tool is listed only where calls are allowed (--allow-call): its description is read there
    listed = _session(store, calls, caller=lambda search: ToolCaller(search, CallPolicy(enabled=True)))
    assert {t.name for t in listed} == {"search_tools", "get_tool", "tool_dependencies", "sparql", "call_tool"}
    assert "call_tool" not in {t.name for t in _session(store, calls)}
    for tool in listed:
        text = tool.description
        assert text and text == text.strip(), tool.name
        assert "\n" not in text and "  " not in text, f"{tool.name}: {text!r}"  # no source indentation or wraps
    search = next(t for t in listed if t.name == "search_tools")
    assert search.description.startswith("Find the tools that can do a task. Returns the best tools first, each")


def test_sparql_errors_point_into_the_agent_s_query(store):
    async def calls(client):
        third = await client.call_tool("sparql", {"query": "SELECT ?n WHERE {\n  ?t tk:name ?n\n  FILTR }"})
        prefix = await client.call_tool("sparql", {"query": "SELECT ?n WHERE { ?t foo:name ?n }"})
        return third, prefix

    third, prefix = _session(store, calls)
    assert third.is_error and "invalid SPARQL: error at 3:" in third.content[0].text
    assert prefix.is_error and prefix.content[0].text.endswith(
        "invalid SPARQL: error at 1:22: undefined prefix 'foo:' (declare it with PREFIX foo: <IRI>)"
    )
