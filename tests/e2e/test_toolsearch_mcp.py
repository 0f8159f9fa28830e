"""`toolkg mcp` driven by the MCP SDK's own client, over stdio and Streamable HTTP, and `toolkg serve`'s /search.

The catalog is a small booking server whose dependencies the build infers: booking a flight needs the
session token login returns and the flight id search_flights finds; cancelling needs a booking.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import anyio
import pytest

from tests.conftest import TOOLKG
from tests.support.endpoint_helpers import free_port, request, serving
from tests.support.live_helpers import TOY_TOOLS, wait_listening
from tests.support.mcp_http import bearer_client

pytestmark = pytest.mark.slow


def _build(manifest: Path, store: Path, prefect_api: str) -> None:
    done = subprocess.run(
        [str(TOOLKG), "build", str(manifest), "--store", str(store), "-q"],
        capture_output=True,
        text=True,
        env={**os.environ, "PREFECT_API_URL": prefect_api},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def catalog(tmp_path_factory, built_store) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("bookings")
    manifest = folder / "bookings.json"
    manifest.write_text(json.dumps({"server": "bookings", "tools": json.loads(TOY_TOOLS.read_text())}))
    return manifest, built_store(manifest)  # this module's alone: one test rebuilds it beside a running server


def _session(server, calls):
    """Connect the SDK client to ``server``, run ``calls(client)`` and return its result."""
    from mcp import Client

    async def run():
        async with Client(server, mode="legacy") as client:
            return await calls(client)

    return anyio.run(run)


def _stdio(store: Path, *extra: str):
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=str(TOOLKG), args=["mcp", "--store", str(store), *extra])


def test_search_tools_over_stdio_returns_the_tool_and_what_to_call_first(catalog) -> None:
    _, store = catalog

    async def calls(client):
        listed = (await client.list_tools()).tools
        found = await client.call_tool("search_tools", {"query": "book a flight for me", "k": 3})
        closure = await client.call_tool("tool_dependencies", {"id": "cancel_booking"})
        one = await client.call_tool("get_tool", {"id": "bookings::login"})
        missing = await client.call_tool("get_tool", {"id": "no_such_tool"})
        return client.server_info, client.instructions, listed, found, closure, one, missing

    info, instructions, listed, found, closure, one, missing = _session(_stdio(store), calls)
    assert info.name == "toolkg" and "search_tools" in instructions
    # call_tool is listed only with --allow-call (tests/e2e/test_mcp_advice.py); the rest only read
    assert {t.name for t in listed} == {"search_tools", "get_tool", "tool_dependencies", "sparql"}
    assert all(t.annotations.read_only_hint for t in listed)
    tools = found.structured_content["tools"]
    assert tools[0]["id"] == "bookings::book_flight"
    assert tools[0]["input_schema"]["required"] == ["session_token", "flight_id"]
    first = {d["tool"]: d for d in tools[0]["call_first"]}
    assert set(first) == {"bookings::login", "bookings::search_flights"}
    assert first["bookings::login"]["parameter"] == "session_token" and first["bookings::login"]["confidence"] > 0.5
    deps = {d["tool"]: d for d in closure.structured_content["dependencies"]}
    assert {"bookings::login", "bookings::book_flight", "bookings::search_flights"} <= set(deps)
    assert deps["bookings::search_flights"]["depth"] == 2  # through book_flight
    order = closure.structured_content["order"]
    assert order[-1] == "bookings::cancel_booking"
    assert order.index("bookings::search_flights") < order.index("bookings::book_flight")
    assert order.index("bookings::login") < order.index("bookings::book_flight")  # book_flight needs it too
    # the session token's two consumers, and the two tools the learned model has the login come first for
    assert one.structured_content["needed_by"] == [
        "bookings::book_flight",
        "bookings::cancel_booking",
        "bookings::get_booking",
        "bookings::search_flights",
    ]
    assert missing.is_error and "no tool 'no_such_tool'" in missing.content[0].text


def test_sparql_refuses_updates_caps_rows_and_stops_a_runaway_query(catalog) -> None:
    _, store = catalog
    runaway = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"

    async def calls(client):
        update = await client.call_tool("sparql", {"query": "PREFIX x: <http://x/>\nINSERT DATA { x:a x:b x:c }"})
        rows = await client.call_tool("sparql", {"query": "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"})
        slow = await client.call_tool("sparql", {"query": runaway})
        after = await client.call_tool("sparql", {"query": "ASK { ?t a tk:Tool }"})  # a fresh worker answers
        bad = await client.call_tool("sparql", {"query": "SELEC nonsense"})
        return update, rows, slow, after, bad

    update, rows, slow, after, bad = _session(_stdio(store, "--sparql-timeout", "2", "--max-rows", "3"), calls)
    assert update.is_error and "updates are refused" in update.content[0].text
    assert len(rows.structured_content["rows"]) == 3 and rows.structured_content["truncated"] is True
    assert slow.is_error and "stopped after 2s" in slow.content[0].text
    assert after.structured_content == {"type": "ask", "boolean": True}
    assert bad.is_error and "invalid SPARQL" in bad.content[0].text


def test_streamable_http_and_a_build_beside_it(catalog, prefect_api: str, tmp_path: Path) -> None:
    manifest, store = catalog
    port = free_port()
    token = "search-test-" + os.urandom(8).hex()
    process = subprocess.Popen(
        [str(TOOLKG), "mcp", "--store", str(store), "--transport", "http", "--bind", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TOOLKG_MCP_TOKEN": token},
    )
    try:
        wait_listening(port, process)
        url = f"http://127.0.0.1:{port}/mcp"

        async def search(client):
            return (await client.call_tool("search_tools", {"query": "list my bookings", "k": 2})).structured_content

        def over_http(calls):
            async def run():
                async with bearer_client(url, token) as client:
                    return await calls(client)

            return anyio.run(run)

        before = over_http(search)
        tools = json.loads(TOY_TOOLS.read_text()) + [
            {
                "name": "list_bookings",
                "description": "List every booking of the logged-in traveller.",
                "inputSchema": {"type": "object", "properties": {"session_token": {"type": "string"}}},
            }
        ]
        manifest.write_text(json.dumps({"server": "bookings", "tools": tools}))
        _build(manifest, store, prefect_api)  # the server keeps running; the build publishes a new snapshot
        after = over_http(search)
    finally:
        process.kill()
    assert before["snapshot"] != after["snapshot"]
    assert "bookings::list_bookings" not in [t["id"] for t in before["tools"]]
    assert after["tools"][0]["id"] == "bookings::list_bookings"
    assert [d["tool"] for d in after["tools"][0]["call_first"]] == ["bookings::login"]


def test_serve_answers_search_as_json(catalog) -> None:
    _, store = catalog
    with serving(store) as base:
        status, body, _ = request(f"{base}/search?q=cancel+my+booking&k=2", method="GET")
        assert status == 200
        answer = json.loads(body)
        assert answer["tools"][0]["id"] == "bookings::cancel_booking"
        assert {d["tool"] for d in answer["tools"][0]["call_first"]} >= {"bookings::login"}
        status, body, _ = request(f"{base}/search?k=2", method="GET")
        assert status == 400 and "query must be a non-empty string" in json.loads(body)["error"]


def test_names_abstention_and_pinned_tools_over_stdio(catalog, tmp_path: Path) -> None:
    _, store = catalog
    settings = tmp_path / "toolkg.toml"
    settings.write_text('[toolsearch]\npinned = ["bookings::get_booking"]\n')

    async def calls(client):
        named = await client.call_tool("search_tools", {"query": "mcp__bookings__cancel_booking", "k": 2})
        nothing = await client.call_tool("search_tools", {"query": "water the tomato plants on the balcony"})
        forced = await client.call_tool("search_tools", {"query": "water the tomato plants", "k": 2, "min_score": 0})
        return named.structured_content, nothing.structured_content, forced.structured_content

    pins = ("--config", str(settings), "--pin", "login")
    named, nothing, forced = _session(_stdio(store, *pins), calls)
    assert named["tools"][0]["id"] == "bookings::cancel_booking" and named["tools"][0]["why"] == "named in the request"
    pinned = ["bookings::get_booking", "bookings::login"]
    for answer in (named, nothing, forced):
        assert [t["id"] for t in answer["tools"] if t.get("pinned")] == pinned
    assert [t["id"] for t in nothing["tools"]] == pinned  # nothing ranked: only the pinned tools
    assert "no tool serves this request well enough" in nothing["note"]
    assert len([t for t in forced["tools"] if t["why"] != "pinned"]) == 2 and forced["min_score"] == 0  # ranked
