"""Live MCP ingestion, as users meet it: `toolkg build CONFIG` in a subprocess against real servers.

The six reference servers come from PyPI and npm at pinned versions (``make mcp-servers``); nothing
here reaches the internet (the fetch server is only listed). Our own toy server covers paging, a
bearer token, and the servers that crash, hang or answer with invalid tools.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from tests.conftest import _PREFECT_HOME
from tests.support.live_helpers import TOY_TOOLS, files_containing, real_servers, start_toy_http, toy_stdio

pytestmark = pytest.mark.slow


def _sdk_listing(entry: dict) -> list:
    """A server's tools/list read with the SDK directly (not through toolkg): what the store must equal."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def listing():
        parameters = StdioServerParameters(command=entry["command"], args=entry.get("args", []), env=entry.get("env"))
        async with Client(parameters, mode="legacy") as client:
            tools, cursor = [], None
            while True:
                page = await client.list_tools(cursor=cursor)
                tools += page.tools
                if not (cursor := page.next_cursor):
                    return tools

    return anyio.run(listing)


def _stored_tools(store: Path) -> dict:
    """Every stored tool id with its details as ``toolkg mcp`` serves them (input schema, annotations)."""
    from toolkg.store.oxigraph_store import ToolStore
    from toolkg.store.tool_details import tool_details

    with ToolStore(store, read_only=True) as opened:
        ids = [r["id"].value for r in opened.select("SELECT ?id WHERE { ?t a tk:Tool ; tk:identifier ?id }")]
        return tool_details(opened, ids)


def test_a_configuration_of_six_real_servers_builds_their_own_tool_lists(cli, tmp_path: Path) -> None:
    servers = real_servers(Path(__file__).resolve().parents[2], tmp_path)
    # Half in Claude Desktop's format, half in VS Code's: both read in one build.
    claude = tmp_path / "claude_desktop_config.json"
    claude.write_text(json.dumps({"mcpServers": {k: servers[k] for k in ("time", "git", "fetch")}}))
    vscode = tmp_path / "project" / ".vscode" / "mcp.json"
    vscode.parent.mkdir(parents=True)
    vscode.write_text(
        json.dumps({"servers": {k: {"type": "stdio", **servers[k]} for k in ("everything", "filesystem", "memory")}})
    )
    store = tmp_path / "store"
    done = cli("build", str(claude), str(vscode), "--store", str(store), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert sorted(s["server"] for s in summary["live"]) == sorted(servers)
    assert {s["status"] for s in summary["live"]} == {"new"}
    stored = _stored_tools(store)
    for name, entry in servers.items():
        own = _sdk_listing(entry)
        assert {f"{name}::{t.name}" for t in own} == {i for i in stored if i.startswith(f"{name}::")}, name
        for tool in own:  # parameters and annotations as the server declared them
            kept = stored[f"{name}::{tool.name}"]
            declared = tool.input_schema or {}
            assert set(kept["input_schema"]["properties"]) == set(declared.get("properties", {}))
            assert set(kept["input_schema"]["required"]) == set(declared.get("required", []))
            if tool.annotations is not None and tool.annotations.read_only_hint is not None:
                assert kept["annotations"]["readOnlyHint"] == tool.annotations.read_only_hint
            if tool.output_schema:
                assert {o["name"] for o in kept["outputs"]} >= set(tool.output_schema.get("properties", {}))
    snapshot = json.loads((store / "live" / "git.json").read_text())
    assert snapshot["serverInfo"]["name"] == "mcp-git" and snapshot["source"] == {
        "configuration": str(claude),
        "transport": "stdio",
        "command": "mcp-server-git",
    }
    assert "--repository" not in json.dumps(snapshot)  # arguments may carry secrets: never written

    again = cli("build", str(claude), str(vscode), "--store", str(store), "--json")
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert {s["status"] for s in summary["live"]} == {"unchanged"} and len(summary["skipped"]) == 6


def test_paging_server_loads_and_the_broken_ones_are_quarantined_without_leaking_the_secret(
    cli, tmp_path: Path
) -> None:
    secret = "tok-" + os.urandom(8).hex()
    good, good_url = start_toy_http(env={"TOY_REQUIRED_TOKEN": secret})
    hang, hang_url = start_toy_http("--mode", "hang")
    invalid, invalid_url = start_toy_http("--mode", "invalid")
    try:
        config = tmp_path / ".mcp.json"
        config.write_text(
            json.dumps(
                {
                    "mcpServers": {
                        "bookings": {"type": "http", "url": good_url, "headers": {"Authorization": f"Bearer {secret}"}},
                        "hanging": {"type": "http", "url": hang_url},
                        "invalid": {"type": "http", "url": invalid_url},
                        "crashing": toy_stdio(TOY_TOOLS, "--mode", "crash"),
                        "locked-out": {"type": "http", "url": good_url, "headers": {"Authorization": "Bearer wrong"}},
                    }
                }
            )
        )
        store = tmp_path / "store"
        done = cli("build", str(config), "--store", str(store), "--json", "--set", "live.timeout=8")
    finally:
        for process in (good, hang, invalid):
            process.kill()
    assert done.returncode == 3, done.stderr
    summary = json.loads(done.stdout)
    status = {s["server"]: s for s in summary["live"]}
    assert status["bookings"]["status"] == "new" and status["bookings"]["tools"] == 5
    reasons = {q["item"]: q["reason"] for q in summary["quarantined"]}
    assert "no answer within 8s" in reasons["hanging"]
    assert "invalid tools/list answer" in reasons["invalid"] and "inputSchema" in reasons["invalid"]
    assert "cannot open the bookings database" in reasons["crashing"]  # the tail of its stderr
    assert "HTTP 401" in reasons["locked-out"]
    assert all("\n" not in r for r in reasons.values())
    assert sorted(i for i in _stored_tools(store)) == sorted(
        f"bookings::{t['name']}" for t in json.loads(TOY_TOOLS.read_text())
    )
    assert secret not in done.stdout + done.stderr
    assert files_containing([store, Path(_PREFECT_HOME), tmp_path], secret) == [str(config)]


def test_relisting_syncs_the_server_whose_tools_changed_and_leaves_the_other(cli, tmp_path: Path) -> None:
    changing = tmp_path / "changing.json"
    tools = json.loads(TOY_TOOLS.read_text())
    changing.write_text(json.dumps(tools))
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"servers": {"steady": toy_stdio(), "changing": toy_stdio(changing)}}))
    store = tmp_path / "store"
    first = cli("build", str(config), "--store", str(store), "--json")
    assert first.returncode == 0, first.stderr
    steady_before = (store / "live" / "steady.json").stat().st_mtime_ns

    tools = [t for t in tools if t["name"] != "get_booking"]  # removed
    tools[0] = {**tools[0], "description": "Sign in and return a session token."}  # changed
    tools.append(
        {
            "name": "list_bookings",
            "description": "List the traveller's bookings.",
            "inputSchema": {"type": "object", "properties": {"session_token": {"type": "string"}}},
        }
    )
    changing.write_text(json.dumps(tools))
    second = cli("build", str(config), "--store", str(store), "--json")
    assert second.returncode == 0, second.stderr
    summary = json.loads(second.stdout)
    live = {s["server"]: s for s in summary["live"]}
    assert live["steady"]["status"] == "unchanged"
    assert (
        live["changing"]["status"],
        live["changing"]["added"],
        live["changing"]["removed"],
        live["changing"]["changed"],
    ) == ("changed", ["list_bookings"], ["get_booking"], ["login"])
    assert [Path(p).name for p in summary["changed"]] == ["changing.json"]
    assert [Path(p).name for p in summary["skipped"]] == ["steady.json"]
    assert (store / "live" / "steady.json").stat().st_mtime_ns == steady_before
    stored = _stored_tools(store)
    assert "changing::list_bookings" in stored and "changing::get_booking" not in stored
    assert stored["changing::login"]["description"] == "Sign in and return a session token."
