"""`toolkg mcp`'s call_tool as an agent meets it: the SDK's client over stdio and Streamable HTTP searches a
store built from a client configuration, then calls the tools it found through toolkg.

The configuration names the pinned real servers mcp-server-time and filesystem (``make mcp-servers``), our
misbehaving call server over stdio (a secret in its env) and over HTTP (a bearer token in its headers),
and the build also reads a manifest file (tools with no live server). Every server process carries the
test's tag in its environment, so the tests count exactly their own processes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import anyio
import psutil
import pytest

from tests.conftest import TOOLKG, build_in_process
from tests.support.endpoint_helpers import free_port
from tests.support.live_helpers import TOY_TOOLS, files_containing, real_servers, wait_listening
from tests.support.mcp_http import bearer_client

CALL_SERVER = Path(__file__).resolve().parents[1] / "mcp_servers" / "call_server.py"
SECRET = "env-secret-" + os.urandom(6).hex()
TOKEN = "header-token-" + os.urandom(6).hex()
TAG = "toolkg-calls-" + os.urandom(4).hex()
NOTE = "The quick brown fox, written for toolkg's call test.\n"

pytestmark = pytest.mark.slow  # the module's build alone takes 30-60 s on two cores


def _tagged() -> list[psutil.Process]:
    """The server processes this module started (through toolkg or directly): TAG is in their environment."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("TOOLKG_CALLS_TEST_TAG") == TAG:
                found.append(process)
        except psutil.Error:
            continue
    return found


def _until_none_left(seconds: float = 15) -> list[psutil.Process]:
    deadline = time.monotonic() + seconds
    while (left := _tagged()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The configuration, the store built from it, the HTTP call server and the folder the filesystem serves."""
    root = tmp_path_factory.mktemp("calls")
    folder = root / "files"
    folder.mkdir()
    (folder / "note.txt").write_text(NOTE)
    real = real_servers(Path(__file__).resolve().parents[2], folder)
    port = free_port()
    http_server = subprocess.Popen(
        [sys.executable, str(CALL_SERVER), "--transport", "http", "--port", str(port)],
        env={**os.environ, "CALL_SERVER_TOKEN": TOKEN, "TOOLKG_CALLS_TEST_TAG": TAG + "-http"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    tag = {"TOOLKG_CALLS_TEST_TAG": TAG}
    servers = {
        "time": {**real["time"], "env": tag},
        "filesystem": {**real["filesystem"], "env": tag},
        "calls": {
            "command": sys.executable,
            "args": [str(CALL_SERVER), "--linger", "120"],  # only a kill stops it: a session left open shows
            "env": {**tag, "CALL_SERVER_SECRET": SECRET},
        },
        "calls-http": {
            "type": "http",
            "url": f"http://127.0.0.1:{port}/mcp",
            "headers": {"Authorization": f"Bearer {TOKEN}"},
        },
    }
    config = root / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    manifest = root / "bookings.json"
    manifest.write_text(json.dumps({"server": "bookings", "tools": json.loads(TOY_TOOLS.read_text())}))
    try:
        wait_listening(port, http_server)
        store = root / "store"
        summary = build_in_process([config, manifest], store)
        assert summary.exit_code == 0, [str(q) for q in summary.quarantined]
        assert not _until_none_left(), "listing leaves no server running"
        yield {"store": store, "config": config, "servers": servers, "folder": folder}
    finally:
        http_server.kill()
        http_server.wait()


def _stdio(store: Path, *flags: str):
    from mcp.client.stdio import StdioServerParameters

    # The SDK starts it with a safe default environment (HOME, PATH...): the session's config folder, where the
    # build noted the configuration it listed (toolkg.live.named), is passed on as a user's would be found.
    config_dir = {"TOOLKG_CONFIG_DIR": os.environ["TOOLKG_CONFIG_DIR"]}
    return StdioServerParameters(command=str(TOOLKG), args=["mcp", "--store", str(store), *flags], env=config_dir)


def _session(server, calls, errlog=None):
    from mcp import Client

    async def run():
        async with Client(server, mode="legacy") as client:
            return await calls(client)

    if errlog is None:
        return anyio.run(run)
    from mcp.client.stdio import stdio_client

    async def run_logged():  # over stdio, with toolkg's standard error kept for the test to read
        async with Client(stdio_client(server, errlog=errlog), mode="legacy") as client:
            return await calls(client)

    return anyio.run(run_logged)


def _direct(entry: dict, name: str, arguments: dict):
    """The same call made to the server itself, with the SDK (not through toolkg)."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def call():
        parameters = StdioServerParameters(command=entry["command"], args=entry.get("args", []), env=entry.get("env"))
        async with Client(parameters) as client:  # toolkg's own client mode ("auto")
            return await client.call_tool(name, arguments)

    return anyio.run(call)


def _same(through, direct) -> None:
    """The result as the agent got it through toolkg equals the server's own: content, structuredContent, isError."""
    for result in (through, direct):
        assert result.content, result
    fields = ("content", "structured_content", "is_error")
    assert [getattr(through, f) for f in fields] == [getattr(direct, f) for f in fields]


def _text(result) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def test_search_then_call_over_stdio_equals_the_servers_own_answer(world, tmp_path: Path) -> None:
    store, servers = world["store"], world["servers"]
    note = str(world["folder"] / "note.txt")
    convert = {"source_timezone": "Europe/Paris", "time": "14:30", "target_timezone": "Asia/Tokyo"}

    async def calls(client):
        listed = {t.name: t for t in (await client.list_tools()).tools}
        found = await client.call_tool("search_tools", {"query": "what time is it now in a timezone", "k": 5})
        ids = [t["id"] for t in found.structured_content["tools"]]
        now = await client.call_tool("call_tool", {"id": "time::get_current_time", "arguments": {"timezone": "UTC"}})
        converted = await client.call_tool("call_tool", {"id": "time::convert_time", "arguments": convert})
        read = await client.call_tool("call_tool", {"id": "filesystem::read_text_file", "arguments": {"path": note}})
        return listed, ids, now, converted, read

    with (tmp_path / "stderr").open("w+") as errlog:
        listed, ids, now, converted, read = _session(_stdio(store, "--allow-call"), calls, errlog)
        errlog.seek(0)
        stderr = errlog.read()
    assert "time::get_current_time" in ids
    call_tool = listed["call_tool"]
    assert call_tool.annotations.read_only_hint is False and call_tool.annotations.open_world_hint is True
    assert "search_tools" in call_tool.description and "call_first" in call_tool.description
    assert set(call_tool.input_schema["properties"]) == {"id", "arguments"}

    _same(converted, _direct(servers["time"], "convert_time", convert))
    _same(read, _direct(servers["filesystem"], "read_text_file", {"path": note}))
    assert NOTE.strip() in _text(read)
    direct_now = json.loads(_text(_direct(servers["time"], "get_current_time", {"timezone": "UTC"})))
    through_now = json.loads(_text(now))
    assert not now.is_error and through_now.keys() == direct_now.keys() and through_now["timezone"] == "UTC"
    assert SECRET not in stderr and TOKEN not in stderr
    assert not _until_none_left(), "toolkg mcp stopped its sessions when the client closed it"


def test_refusals_failures_and_recovery_are_one_line(world, tmp_path: Path) -> None:
    store = world["store"]

    async def off(client):
        return await client.call_tool("call_tool", {"id": "time::get_current_time", "arguments": {"timezone": "UTC"}})

    refused = _session(_stdio(store), off)
    assert refused.is_error and "calls are off" in _text(refused) and "--allow-call" in _text(refused)
    narrowed = _session(_stdio(store, "--allow-call", "filesystem"), off)
    assert narrowed.is_error and "--allow-call time" in _text(narrowed)

    async def calls(client):
        async def call(tool, arguments=None):
            return await client.call_tool("call_tool", {"id": tool, "arguments": arguments or {}})

        answers = {
            "write": await call("filesystem::write_file", {"path": str(tmp_path / "x.txt"), "content": "no"}),
            "wipe": await call("calls::wipe", {"path": "/"}),
            "wrong": await call("time::get_current_time", {"timezone": 5}),
            "missing": await call("time::convert_time", {"time": "14:00"}),
            "files": await call("bookings::login", {"username": "a", "password": "b"}),
            "unknown": await call("no_such_tool"),
            "first": await call("calls::pid"),
            "hang": await call("calls::nap", {"seconds": 60}),
            "after hang": await call("calls::pid"),
            "crash": await call("calls::crash"),
            "after crash": await call("calls::pid"),
            "failed": await call("calls::fail", {"reason": "as asked"}),
            "secret": await call("calls::secret_length"),
            "header": await call("calls-http::echo", {"text": "over http"}),
        }
        return answers

    started = time.monotonic()
    with (tmp_path / "stderr").open("w+") as errlog:
        answers = _session(_stdio(store, "--allow-call", "--call-timeout", "3"), calls, errlog)
        errlog.seek(0)
        stderr = errlog.read()
    assert time.monotonic() - started < 60
    errors = {name: _text(result) for name, result in answers.items() if result.is_error}
    for name, text in errors.items():
        assert "\n" not in text and SECRET not in text and TOKEN not in text, (name, text)
    assert "--allow-destructive" in errors["write"] and "--allow-destructive" in errors["wipe"]
    assert not (tmp_path / "x.txt").exists()
    assert "argument 'timezone': 5 is not of type 'string'" in errors["wrong"]
    assert "missing required argument 'source_timezone'" in errors["missing"]
    assert "tool bookings::login has no live server (its catalog was built from files)" in errors["files"]
    assert "no tool 'no_such_tool'" in errors["unknown"]
    assert "within 3s (timeout" in errors["hang"]
    assert "closed the connection during the call" in errors["crash"] and "crashing on purpose" in errors["crash"]
    pids = [answers[k].structured_content["result"] for k in ("first", "after hang", "after crash")]
    assert len(set(pids)) == 3, "each failure gave the next call a fresh session"
    assert answers["failed"].is_error and errors["failed"].endswith("failed as asked: as asked")
    _same(answers["failed"], _direct(world["servers"]["calls"], "fail", {"reason": "as asked"}))  # its own words
    assert answers["secret"].structured_content == {"result": len(SECRET)}  # it got its secret, nobody saw it
    assert answers["header"].structured_content == {"text": "over http", "times": 1}
    assert SECRET not in stderr and TOKEN not in stderr
    assert not _until_none_left()


def test_twenty_concurrent_clients_over_http_and_no_session_leaks(world, tmp_path: Path) -> None:
    store, servers = world["store"], world["servers"]
    port = free_port()
    mcp_token = "calls-test-" + os.urandom(8).hex()
    with (tmp_path / "stderr").open("w+") as errlog:
        toolkg = subprocess.Popen(
            [str(TOOLKG), "mcp", "--store", str(store), "--transport", "http", "--bind", f"127.0.0.1:{port}"]
            + ["--allow-call", "time", "--allow-call", "calls", "--allow-call", "filesystem", "--call-timeout", "30"],
            stdout=subprocess.DEVNULL,
            stderr=errlog,
            env={**os.environ, "TOOLKG_MCP_TOKEN": mcp_token},
        )
        try:
            wait_listening(port, toolkg)
            url = f"http://127.0.0.1:{port}/mcp"
            note = str(world["folder"] / "note.txt")
            seen = {"most": 0}

            async def one_client(number: int, answers: dict) -> None:
                async with bearer_client(url, mcp_token) as client:
                    call: tuple[str, Mapping[str, object]]  # a tool's id and its arguments
                    if number % 3 == 0:
                        convert = {"source_timezone": "UTC", "time": "08:00", "target_timezone": "Asia/Tokyo"}
                        call = ("time::convert_time", convert)
                    elif number % 3 == 1:
                        call = ("filesystem::read_text_file", {"path": note})
                    else:
                        call = ("calls::nap", {"seconds": 0.5})
                    answers[number] = await client.call_tool("call_tool", {"id": call[0], "arguments": call[1]})

            async def watch(stop: anyio.Event) -> None:
                while not stop.is_set():
                    seen["most"] = max(seen["most"], len(_tagged()))
                    await anyio.sleep(0.1)

            async def all_clients() -> dict:
                answers: dict = {}
                stop = anyio.Event()
                async with anyio.create_task_group() as group:
                    group.start_soon(watch, stop)
                    async with anyio.create_task_group() as clients:
                        for number in range(20):
                            clients.start_soon(one_client, number, answers)
                    stop.set()
                return answers

            answers = anyio.run(all_clients)
            assert sorted(answers) == list(range(20))
            assert not [n for n, a in answers.items() if a.is_error], {n: _text(a) for n, a in answers.items()}
            assert 1 <= seen["most"] <= 3, "one session per server, whatever the number of clients"
            assert len(_tagged()) == 3  # kept open for the next calls
            read = _direct(servers["filesystem"], "read_text_file", {"path": note})
            for number, answer in answers.items():
                if number % 3 == 1:
                    _same(answer, read)
        finally:
            toolkg.send_signal(signal.SIGINT)
            try:
                toolkg.wait(timeout=30)
            except subprocess.TimeoutExpired:
                toolkg.kill()
                raise
        errlog.seek(0)
        stderr = errlog.read()
    assert not _until_none_left(), "no server process outlives toolkg mcp"
    assert SECRET not in stderr and TOKEN not in stderr
    leaks = files_containing([store], SECRET) + files_containing([store], TOKEN)
    assert not leaks, leaks


def test_sigterm_stops_toolkg_and_the_servers_it_started(world) -> None:
    """Killed with SIGTERM while its client still holds the pipe open, `toolkg mcp` stops its sessions' servers
    (the call server outlives its stdin: only a kill stops it) before it dies."""

    async def calls(client):
        answer = await client.call_tool("call_tool", {"id": "calls::pid", "arguments": {}})
        (toolkg,) = [
            p for p in psutil.Process().children(recursive=True) if "mcp" in p.cmdline() and str(TOOLKG) in p.cmdline()
        ]
        toolkg.send_signal(signal.SIGTERM)
        toolkg.wait(20)
        return answer

    try:
        _session(_stdio(world["store"], "--allow-call"), calls)
    except BaseException as exc:  # noqa: BLE001 - the client's connection dies with its server: expected
        if not isinstance(exc, Exception):
            raise
    assert not _until_none_left(5), "the call server was stopped, not left to linger"
