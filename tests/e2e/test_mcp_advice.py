"""What `toolkg mcp` advises an agent is safe and true, asked through the MCP SDK's client over stdio.

The catalog is a reviewer's case from the real catalogs: LiveMCPBench's git server (the build infers that
git_commit's repo_path comes from git_init, which creates a repository) and ToolLinkOS's launch_ms_teams with
the device tools it declares (a status check per device setting, each declaring "once the status is
retrieved, it can be set" on its setter). Calling a setter or git_init unasked changes the user's world.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from tests.conftest import TOOLKG, build_in_process

ROOT = Path(__file__).resolve().parents[2]
CALL_SERVER = ROOT / "tests" / "mcp_servers" / "call_server.py"

pytestmark = pytest.mark.slow


def _catalog(folder: Path) -> list[Path]:
    """LiveMCPBench's git server and ToolLinkOS's launch_ms_teams with the core tools it and they need."""
    data = ROOT / "data"
    git = [e for e in json.loads((data / "livemcpbench" / "tools.json").read_text()) if "git" in e["tools"]]
    (folder / "git.json").write_text(json.dumps(git))
    regular = json.loads((data / "toollinkos" / "regular_tools.json").read_text())
    teams = [t for t in regular if t["name"] == "launch_ms_teams"]
    checks = {d["name"] for d in teams[0]["depends_on"]}
    core = [
        t
        for t in json.loads((data / "toollinkos" / "core_tools.json").read_text())
        if t["name"] in checks or t["name"].replace("set_", "get_", 1) in checks
    ]
    devices = folder / "toollinkos"
    devices.mkdir()
    (devices / "regular_tools.json").write_text(json.dumps(teams))
    (devices / "core_tools.json").write_text(json.dumps(core))
    return [folder / "git.json", devices]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("advice")
    summary = build_in_process(_catalog(folder), folder / "store", links=False)
    assert summary.exit_code == 0, [str(q) for q in summary.quarantined]
    return folder / "store"


def _session(store: Path, calls, *flags: str):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    server = StdioServerParameters(command=str(TOOLKG), args=["mcp", "--store", str(store), *flags])

    async def run():
        async with Client(server, mode="legacy") as client:
            return await calls(client)

    return anyio.run(run)


def _text(result) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def test_a_setter_is_a_conditional_step_after_the_status_check_it_follows(store) -> None:
    async def calls(client):
        closure = await client.call_tool("tool_dependencies", {"id": "regular_tools::launch_ms_teams"})
        found = await client.call_tool("search_tools", {"query": "launch microsoft teams", "k": 7})
        return closure.structured_content, found.structured_content

    closure, found = _session(store, calls)
    ranked = {t["id"]: t for t in found["tools"]}
    assert found["abstain"] is False and found["tools"][0]["id"] == "regular_tools::launch_ms_teams"
    added = [t for t in ranked if t.startswith("core_tools::set_")]
    assert added, ranked  # retrieval adds the setters as prerequisites: on their condition, said so
    for setter in added:
        assert ranked[setter]["conditional"] is True and ranked[setter]["condition"].startswith("only if needed")
        assert "conditional:" in ranked[setter]["why"]
    assert all(not ranked[t]["conditional"] for t in ranked if "::get_" in t or t.endswith("launch_ms_teams"))
    steps = {d["tool"]: d for d in closure["dependencies"]}
    order = closure["order"]
    assert order[-1] == "regular_tools::launch_ms_teams"
    setters = [t for t in steps if t.startswith("core_tools::set_")]
    assert len(setters) == 3, steps
    for setter in setters:
        check = setter.replace("::set_", "::get_")
        assert steps[setter]["conditional"] is True, steps[setter]
        assert steps[setter]["condition"].startswith("only if needed") and "retrieved" in steps[setter]["condition"]
        assert order.index(check) < order.index(setter), order  # the check first: never set blind
        assert steps[check]["conditional"] is False and "condition" not in steps[check]  # a read: call it first


def test_an_inferred_state_changing_producer_is_only_an_if_missing_suggestion(store) -> None:
    async def calls(client):
        one = await client.call_tool("get_tool", {"id": "git::git_commit"})
        closure = await client.call_tool("tool_dependencies", {"id": "git::git_commit"})
        status = await client.call_tool("get_tool", {"id": "git::git_status"})
        return one.structured_content, closure.structured_content, status.structured_content

    one, closure, status = _session(store, calls)
    init = {d["tool"]: d for d in one["call_first"]}["git::git_init"]
    assert init["basis"] == "inferred" and init["conditional"] is True
    assert init["condition"].startswith("only if repo_path does not exist yet"), init
    assert one["call_first"][-1]["tool"] == "git::git_init" or all(d["conditional"] for d in one["call_first"])
    assert {d["tool"]: d for d in closure["dependencies"]}["git::git_init"]["conditional"] is True
    for edge in status["call_first"]:  # git_status's prerequisites that only read stay unconditional
        assert edge["conditional"] is (edge["tool"] == "git::git_init"), edge


def test_argument_errors_are_one_line_and_an_unknown_id_gets_a_suggestion(store) -> None:
    async def calls(client):
        too_many = await client.call_tool("search_tools", {"query": "commit my changes", "k": 100})
        wrong_type = await client.call_tool("search_tools", {"query": "commit my changes", "steps": "one step"})
        typo = await client.call_tool("get_tool", {"id": "git_comit"})
        typo_id = await client.call_tool("tool_dependencies", {"id": "git::git_comit"})
        return too_many, wrong_type, typo, typo_id

    too_many, wrong_type, typo, typo_id = _session(store, calls)
    for refused in (too_many, wrong_type, typo, typo_id):
        assert refused.is_error
        text = _text(refused)
        assert "\n" not in text and "http" not in text and "pydantic" not in text, text
    assert _text(too_many) == "search_tools: argument 'k': input should be less than or equal to 50 (got 100)"
    assert "argument 'steps'" in _text(wrong_type)
    assert "did you mean git::git_commit?" in _text(typo) and "no tool 'git_comit'" in _text(typo)
    assert "did you mean git::git_commit?" in _text(typo_id)


def test_call_tool_is_listed_only_when_calls_are_allowed(store) -> None:
    async def calls(client):
        listed = {t.name for t in (await client.list_tools()).tools}
        found = await client.call_tool("search_tools", {"query": "commit my changes to the repository", "k": 3})
        refused = await client.call_tool("call_tool", {"id": "git::git_status", "arguments": {"repo_path": "."}})
        return listed, found.structured_content, refused

    listed, found, refused = _session(store, calls)
    assert listed == {"search_tools", "get_tool", "tool_dependencies", "sparql"}
    assert all(t["callable"] is False and t["live"] is False for t in found["tools"])
    assert refused.is_error and "calls are off" in _text(refused)  # asked anyway: it says why
    listed, found, _ = _session(store, calls, "--allow-call")
    assert "call_tool" in listed
    assert all(t["callable"] is False for t in found["tools"])  # catalog tools: no live server to call


def test_a_live_tool_is_callable_and_ranks_ahead_of_a_catalog_copy(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"alpha": {"command": sys.executable, "args": [str(CALL_SERVER)]}}}))
    copy: dict[str, object] = {
        "name": "echo",
        "description": "Say the text back, repeated, and repeated again as many times as asked.",
    }
    copy["inputSchema"] = {"type": "object", "properties": {"text": {"type": "string"}, "times": {"type": "integer"}}}
    catalog = tmp_path / "mirror.json"
    catalog.write_text(json.dumps({"server": "mirror", "tools": [copy]}))
    summary = build_in_process([config, catalog], tmp_path / "store", links=False)
    assert summary.exit_code == 0, [str(q) for q in summary.quarantined]

    async def calls(client):
        found = await client.call_tool("search_tools", {"query": "say the text back repeated many times", "k": 3})
        one = await client.call_tool("get_tool", {"id": "alpha::echo"})
        return found.structured_content, one.structured_content

    found, one = _session(tmp_path / "store", calls, "--allow-call")
    ids = [t["id"] for t in found["tools"]]
    assert ids.index("alpha::echo") < ids.index("mirror::echo"), ids
    tools = {t["id"]: t for t in found["tools"]}
    assert tools["alpha::echo"]["live"] is True and tools["alpha::echo"]["callable"] is True
    assert tools["mirror::echo"]["callable"] is False and tools["mirror::echo"]["catalog_copy_of"] == "alpha::echo"
    assert one["callable"] is True
    found, one = _session(tmp_path / "store", calls)  # without --allow-call nothing is callable
    assert one["live"] is True and one["callable"] is False
    assert all(t["callable"] is False for t in found["tools"])
