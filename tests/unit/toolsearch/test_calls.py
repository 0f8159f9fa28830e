"""`call_tool`'s parts on their own: the policy, the argument check, finding a server at call time, and the
session pool against a misbehaving server of ours (tests/mcp_servers/call_server.py) over stdio.

The pool tests use a stand-in for ToolSearch (a dict of tool records): no store is built here.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import anyio
import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolkg.errors import NotFoundError, ToolkgError
from toolkg.toolsearch.call_pool import CallFailed
from toolkg.toolsearch.calls import (
    CallPolicy,
    CallRefused,
    CallSettings,
    ServerLocator,
    ToolCaller,
    check_arguments,
)

CALL_SERVER = Path(__file__).resolve().parents[2] / "mcp_servers" / "call_server.py"

# --- the policy ----------------------------------------------------------------------------------------


def test_calls_are_off_unless_allowed_and_each_refusal_names_the_flag() -> None:
    off = CallPolicy.from_flags(None)
    assert not off.enabled
    said = off.refusal("time::now", "time", {})
    assert said is not None and "--allow-call" in said and "\n" not in said

    narrowed = CallPolicy.from_flags(["git", "My Server"])
    assert narrowed.servers == {"git", "My-Server"}  # as server ids
    assert narrowed.refusal("git::log", "git", {}) is None
    assert narrowed.refusal("My-Server::x", "My-Server", {}) is None
    assert "--allow-call time" in (narrowed.refusal("time::now", "time", {}) or "")

    every = CallPolicy.from_flags(["*"])
    assert every.enabled and every.servers == frozenset()
    assert every.refusal("fs::write_file", "fs", {"destructiveHint": False}) is None
    assert "--allow-destructive" in (every.refusal("fs::write_file", "fs", {"destructiveHint": True}) or "")
    bold = CallPolicy.from_flags(["*"], allow_destructive=True)
    assert bold.refusal("fs::w", "fs", {"destructiveHint": True}) is None
    assert every.refusal("x::y", "x", {"destructiveHint": "true"}) is None  # only a real true is a claim


servers = st.sampled_from(["time", "git", "fs", "memory"])


@given(
    allow=st.none() | st.lists(servers | st.just("*"), min_size=1, max_size=3),
    destructive_ok=st.booleans(),
    server=servers,
    hint=st.sampled_from([None, True, False]),
)
def test_a_call_is_allowed_exactly_when_every_flag_it_needs_was_given(allow, destructive_ok, server, hint) -> None:
    policy = CallPolicy.from_flags(allow, destructive_ok)
    annotations = {} if hint is None else {"destructiveHint": hint}
    refusal = policy.refusal(f"{server}::tool", server, annotations)
    server_ok = allow is not None and ("*" in allow or server in allow)
    allowed = server_ok and (hint is not True or destructive_ok)
    assert (refusal is None) == allowed
    if refusal is not None:
        assert "\n" not in refusal and refusal.startswith(f"{server}::tool: ")
        flag = "--allow-destructive" if server_ok else "--allow-call"
        assert flag in refusal


# --- the argument check ----------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {
        "timezone": {"type": "string"},
        "count": {"type": "integer", "minimum": 1},
        "options": {
            "type": "object",
            "properties": {"depth": {"type": "integer"}},
            "required": ["depth"],
        },
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["timezone"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({"timezone": 5}, "argument 'timezone': 5 is not of type 'string'"),
        ({}, "missing required argument 'timezone'"),
        ({"timezone": "UTC", "count": 0}, "argument 'count': 0 is less than the minimum of 1"),
        ({"timezone": "UTC", "options": {}}, "missing required field 'depth' in argument 'options'"),
        ({"timezone": "UTC", "tags": ["a", 2]}, "argument 'tags.1': 2 is not of type 'string'"),
        ({"timezone": "UTC", "colour": "red"}, "unexpected argument: Additional properties are not allowed"),
    ],
)
def test_a_wrong_argument_is_named_in_one_line(arguments, said) -> None:
    with pytest.raises(CallRefused) as refused:
        check_arguments("time::now", SCHEMA, arguments)
    message = str(refused.value)
    assert message.startswith(f"time::now: {said}"), message
    assert "\n" not in message


def test_fitting_arguments_and_schemas_toolkg_cannot_apply_pass_through() -> None:
    check_arguments("t::x", SCHEMA, {"timezone": "UTC", "count": 2, "options": {"depth": 1}})
    check_arguments("t::x", None, {"anything": 1})
    check_arguments("t::x", {"type": "object", "properties": {"a": {"type": "no-such-type"}}}, {"a": 1})
    # a reference outside the schema is not fetched: the server applies its own schema
    remote = {"type": "object", "properties": {"a": {"$ref": "https://example.invalid/schema.json"}}}
    check_arguments("t::x", remote, {"a": 1})


@given(st.dictionaries(st.sampled_from(["timezone", "count", "colour"]), st.integers() | st.text(max_size=5)))
def test_every_refusal_names_an_argument_given_or_required(arguments) -> None:
    try:
        check_arguments("t::x", SCHEMA, arguments)
    except CallRefused as refused:
        message = str(refused)
        assert "\n" not in message
        assert any(f"'{name}'" in message for name in [*arguments, "timezone"])
    else:
        assert isinstance(arguments.get("timezone"), str)
        assert "colour" not in arguments
        assert not isinstance(arguments.get("count"), str) and arguments.get("count", 1) >= 1


# --- finding the server -------------------------------------------------------------------------------


def _snapshot(store: Path, server: str, source: dict, tools: list[dict] | None = None, named: bool = True) -> None:
    """A live snapshot as a build writes it; ``named``: that build was this user's, naming the configuration
    on its command line (toolkg.live.named notes it, as refresh_live does)."""
    from toolkg.live.named import remember

    folder = store / "live"
    folder.mkdir(parents=True, exist_ok=True)
    if named and Path(str(source.get("configuration"))).is_absolute():
        remember([str(source["configuration"])])
    document = {"server": server, "source": source, "tools": tools or []}
    (folder / f"{server}.json").write_text(json.dumps(document))


def test_a_server_is_found_from_the_configuration_its_snapshot_names(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TEST_CALL_KEY", "key-from-the-environment")
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "calls": {"command": "mcp-calls", "args": ["--x"], "env": {"KEY": "${env:TEST_CALL_KEY}"}},
                    "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer abcdef"}},
                    "prompted": {"command": "x", "env": {"KEY": "${input:key}"}},
                }
            }
        )
    )
    store = tmp_path / "store"
    public = {"configuration": str(config), "transport": "stdio", "command": "mcp-calls"}
    for server in ("calls", "remote", "prompted", "dropped"):
        _snapshot(store, server, public)
    _snapshot(store, "web", {"configuration": "address", "transport": "http", "url": "https://web.example/mcp"})
    _snapshot(store, "local", {"configuration": "address", "transport": "stdio", "command": "mcp-local"})
    _snapshot(store, "moved", {**public, "configuration": str(tmp_path / "gone.json")})
    (store / "live" / "files.json").unlink(missing_ok=True)
    stranger = tmp_path / "shipped" / "mcp.json"  # a configuration a store names, no build of this user's did
    stranger.parent.mkdir()
    stranger.write_text(config.read_text())
    _snapshot(store, "foreign", {**public, "configuration": str(stranger)}, named=False)
    _snapshot(store, "relative", {**public, "configuration": "mcp.json"}, named=False)
    keyed = {"configuration": "address", "transport": "http", "url": "https://mcp.example.com/s/[redacted]/mcp"}
    _snapshot(store, "keyed", keyed)
    locator = ServerLocator(store)

    def locate(server: str):
        from toolkg.live.snapshots import read_snapshot

        return locator.locate(f"{server}::t", server, read_snapshot(store / "live" / f"{server}.json"))

    calls = locate("calls")
    assert (calls.command, calls.args, dict(calls.env)) == ("mcp-calls", ("--x",), {"KEY": "key-from-the-environment"})
    assert dict(locate("remote").headers) == {"Authorization": "Bearer abcdef"}
    assert locate("web").url == "https://web.example/mcp" and locate("web").id == "web"
    with pytest.raises(CallRefused, match=r"local::t: .*mcp\+stdio: address.*--live 'mcp\+stdio:mcp-local"):
        locate("local")
    with pytest.raises(CallRefused, match=r"cannot be started: .*\$\{input:key\}"):
        locate("prompted")
    with pytest.raises(NotFoundError, match="no longer in"):
        locate("dropped")
    with pytest.raises(NotFoundError, match="gone.json, which is gone; give its configuration with --live"):
        locate("moved")
    with pytest.raises(CallRefused, match=r"^tool files::t has no live server \(its catalog was built from files\)"):
        locate("files")
    for server in ("foreign", "relative"):  # the store's word alone starts nothing
        with pytest.raises(CallRefused, match="a configuration no toolkg build of yours named.*--live FILE"):
            locate(server)
    with pytest.raises(CallRefused, match=r"an address holding a key, which is not stored.*--live URL"):
        locate("keyed")

    overridden = ServerLocator(store, ["mcp+stdio:mcp-local --flag"])
    spec = overridden.locate("mcp-local::t", "mcp-local", None)
    assert (spec.command, spec.args) == ("mcp-local", ("--flag",))
    with pytest.raises(CallRefused, match="not an MCP client configuration"):
        ServerLocator(store, [str(tmp_path / "nothing.txt")])
    with pytest.raises(CallRefused, match="a folder; name the MCP client configuration"):  # never searched
        ServerLocator(store, [str(tmp_path)])
    with pytest.raises(CallRefused, match="credentials"):
        ServerLocator(store, ["https://user:pw@host.example/mcp"])


# --- calls through the pool, against our misbehaving server ------------------------------------------

SECRET = "s3cret-" + os.urandom(6).hex()


class _Search:
    """ToolSearch's get_tool over a dict: what ToolCaller needs of it."""

    def __init__(self, store_dir: Path, records: dict[str, dict]) -> None:
        self.store_dir, self.records = store_dir, records

    def get_tool(self, tool: str) -> dict:
        if tool not in self.records:
            raise NotFoundError(f"no tool {tool!r} in the catalog")
        return self.records[tool]


def _listed_tools() -> list[dict]:
    """The call server's own tools/list, as a live snapshot holds it."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def listing():
        async with Client(StdioServerParameters(command=sys.executable, args=[str(CALL_SERVER)])) as client:
            tools = (await client.list_tools()).tools
            return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]

    return anyio.run(listing)


@pytest.fixture(scope="module")
def listed() -> list[dict]:
    return _listed_tools()


@pytest.fixture
def calls_store(tmp_path: Path, listed: list[dict]) -> tuple[_Search, str]:
    tag = "unit-" + os.urandom(4).hex()
    config = tmp_path / "mcp.json"
    # --linger: it outlives its stdin, so only a session closed by toolkg (which kills it) stops it
    args = [str(CALL_SERVER), "--tag", tag, "--linger", "60"]
    entry = {"command": sys.executable, "args": args, "env": {"CALL_SERVER_SECRET": SECRET}}
    config.write_text(json.dumps({"mcpServers": {"calls": entry}}))
    store = tmp_path / "store"
    _snapshot(store, "calls", {"configuration": str(config), "transport": "stdio", "command": "python"}, listed)
    records = {
        f"calls::{t['name']}": {
            "id": f"calls::{t['name']}",
            "server": "calls",
            "name": t["name"],
            "annotations": t.get("annotations", {}),
            "input_schema": {"type": "object", "properties": {}, "required": []},
        }
        for t in listed
    }
    return _Search(store, records), tag


def _processes(tag: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if tag in (process.info["cmdline"] or []):
                found.append(process)
        except psutil.Error:
            continue
    return found


def _until_gone(tag: str, seconds: float = 10) -> list[psutil.Process]:
    deadline = time.monotonic() + seconds
    while (left := _processes(tag)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _gone(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


def _direct(name: str, arguments: dict):
    """The same call made to the server directly, with the SDK."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def call():
        parameters = StdioServerParameters(command=sys.executable, args=[str(CALL_SERVER)])
        async with Client(parameters) as client:
            return await client.call_tool(name, arguments)

    return anyio.run(call)


@pytest.mark.slow
def test_calls_are_relayed_unchanged_and_checked_first(calls_store) -> None:
    search, tag = calls_store
    with ToolCaller(search, CallPolicy.from_flags(["calls"]), CallSettings(timeout=20)) as caller:
        echoed = caller.call_sync("calls::echo", {"text": "hi", "times": 2})
        failed = caller.call_sync("calls::fail", {"reason": "no"})
        assert caller.call_sync("calls::secret_length").structured_content == {"result": len(SECRET)}
        with pytest.raises(CallRefused, match="calls::echo: argument 'times': 'x' is not of type 'integer'"):
            caller.call_sync("calls::echo", {"text": "hi", "times": "x"})
        with pytest.raises(CallRefused, match="calls::echo: missing required argument 'text'"):
            caller.call_sync("calls::echo", {})
        with pytest.raises(CallRefused, match="--allow-destructive"):
            caller.call_sync("calls::wipe", {"path": "/"})
        with pytest.raises(NotFoundError):
            caller.call_sync("calls::nothing", {})
        assert caller.pool.stats() == {"open": 1, "opened": 1}
        assert len(_processes(tag)) == 1
    assert not _until_gone(tag), "closing the caller stops the server"
    assert echoed.model_dump(by_alias=True) == _direct("echo", {"text": "hi", "times": 2}).model_dump(by_alias=True)
    assert failed.model_dump(by_alias=True) == _direct("fail", {"reason": "no"}).model_dump(by_alias=True)
    assert echoed.structured_content == {"text": "hi hi", "times": 2} and failed.is_error


@pytest.mark.slow
def test_a_hanging_or_crashing_server_fails_in_one_line_and_the_next_call_gets_a_fresh_one(calls_store) -> None:
    search, tag = calls_store
    settings = CallSettings(timeout=20)
    with ToolCaller(search, CallPolicy.from_flags(["*"]), settings) as caller:
        # Only the hanging call runs under the short limit: the limit also covers opening a session (starting
        # a Python server), which a loaded machine can take over 1.5 s to do, and which is not under test here.
        first = caller.call_sync("calls::pid").structured_content["result"]
        caller.pool.timeout = 1.5
        started = time.monotonic()
        with pytest.raises(CallFailed) as hung:
            caller.call_sync("calls::nap", {"seconds": 30})
        assert time.monotonic() - started < 5
        caller.pool.timeout = 20
        message = str(hung.value)
        assert "\n" not in message and "within 1.5s (timeout" in message and "--call-timeout" in message, message
        second = caller.call_sync("calls::pid").structured_content["result"]
        assert second != first and _gone(first)

        with pytest.raises(CallFailed) as crashed:
            caller.call_sync("calls::crash")
        message = str(crashed.value)
        assert "\n" not in message and "closed the connection during the call" in message, message
        assert "crashing on purpose" in message and SECRET not in message and "[redacted]" in message
        third = caller.call_sync("calls::pid").structured_content["result"]
        assert third not in (first, second)
        assert caller.pool.stats() == {"open": 1, "opened": 3}
        assert [p.pid for p in _processes(tag)] == [third]
    assert not _until_gone(tag)


@pytest.mark.slow
def test_an_idle_session_closes_and_concurrent_calls_share_one_session(calls_store) -> None:
    search, tag = calls_store
    settings = CallSettings(timeout=20, idle=0.5, per_server=3)
    with ToolCaller(search, CallPolicy.from_flags(["*"]), settings) as caller:
        in_flight = {"now": 0, "most": 0}

        async def one(results: list) -> None:
            results.append(await caller.call("calls::nap", {"seconds": 0.3}))

        async def many() -> list:
            results: list = []
            async with anyio.create_task_group() as group:
                for _ in range(9):
                    group.start_soon(one, results)
                await anyio.sleep(0.2)
                in_flight["most"] = len(_processes(tag))
            return results

        started = time.monotonic()
        results = anyio.run(many)
        took = time.monotonic() - started
        assert [r.content[0].text for r in results] == ["slept 0.3s"] * 9
        assert in_flight["most"] == 1 and caller.pool.stats()["opened"] == 1
        assert took >= 0.9  # three at a time: three rounds of 0.3 s
        assert not _until_gone(tag, 5), "an idle session closes"
        assert caller.pool.stats() == {"open": 0, "opened": 1}
        assert caller.call_sync("calls::echo", {"text": "again"}).structured_content["text"] == "again"
        assert caller.pool.stats()["opened"] == 2


def test_a_server_that_cannot_start_is_one_line_with_its_secret_blanked(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"gone": {"command": f"/no/such/{SECRET}", "env": {"K": SECRET}}}}))
    store = tmp_path / "store"
    _snapshot(store, "gone", {"configuration": str(config), "transport": "stdio", "command": "x"}, [{"name": "t"}])
    search = _Search(store, {"gone::t": {"id": "gone::t", "server": "gone", "name": "t", "annotations": {}}})
    with ToolCaller(search, CallPolicy.from_flags(["*"]), CallSettings(timeout=10)) as caller:
        with pytest.raises(ToolkgError) as failed:
            caller.call_sync("gone::t")
    message = str(failed.value)
    assert message.startswith("gone::t: cannot reach server 'gone'") and SECRET not in message, message


@given(
    before=st.integers(0, 3000),
    after=st.integers(0, 1500),
    repeats=st.integers(1, 80),
)
def test_the_stderr_tail_shown_holds_no_piece_of_a_secret(before, after, repeats) -> None:
    """Wherever the window read from the server's stderr begins, even inside a secret, no piece of it shows."""
    import tempfile

    from toolkg.live.sources import ServerSpec
    from toolkg.toolsearch.call_pool import STDERR_TAIL, _Session

    secret = "0123456789abcdef" * 2
    text = "x" * before + (secret + " ") * repeats + "y" * after  # many: redaction shrinks the window a lot

    async def tail() -> str:
        spec = ServerSpec(name="s", source="address", transport="stdio", command="c", env={"KEY": secret})
        with tempfile.TemporaryFile("w+b") as errlog:
            errlog.write(text.encode())
            errlog.flush()
            return _Session(spec, errlog=errlog).stderr_tail()

    shown = anyio.run(tail)
    assert len(shown) <= STDERR_TAIL
    assert not any(secret[i : i + 6] in shown for i in range(len(secret) - 5)), shown
    assert shown.endswith("y" * min(after, 100)) or after > STDERR_TAIL


@pytest.mark.slow
def test_toolkg_mcp_offers_call_tool_and_answers_through_it(calls_store) -> None:
    """The MCP server's fifth tool, in-process: listed (as not read-only and open-world) only once calls are on,
    refusing while they are off, relaying the server's result once they are on."""
    from mcp import Client

    from toolkg.toolsearch.mcp_server import make_mcp_server

    search, _ = calls_store

    async def session(caller):
        async with Client(make_mcp_server(search, caller)) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            answer = await client.call_tool("call_tool", {"id": "calls::echo", "arguments": {"text": "hi"}})
            return listed.get("call_tool"), answer

    with ToolCaller(search) as off, ToolCaller(search, CallPolicy.from_flags(["*"])) as on:
        hidden, refused = anyio.run(session, off)
        tool, answered = anyio.run(session, on)
    assert hidden is None  # not offered while calls are off
    assert tool is not None and tool.annotations.read_only_hint is False and tool.annotations.open_world_hint is True
    assert "search_tools" in tool.description and "call_first" in tool.description
    assert refused.is_error and "calls are off" in refused.content[0].text
    assert not answered.is_error and answered.structured_content == {"text": "hi", "times": 1}
