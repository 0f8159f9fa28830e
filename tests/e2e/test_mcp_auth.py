"""`toolkg mcp --transport http` and its bearer tokens, attacked as issue 40 found it: any local process that
reached the port opened a session and, with --allow-call, called tools.

The store lists two live servers, `alpha` and `beta` (both our call test server over stdio), so a token scoped
to one can be shown refused on the other. Every server is the real CLI in a subprocess on 127.0.0.1; clients are
the MCP SDK's own (with the header a client configuration sets) or raw HTTP, to read statuses and headers. What
exits at once (a refusal, --show-token) runs in-process (tests/support/cli_runner.py): the same code, the same
exit code and stderr, without a subprocess's start-up.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from tests.conftest import TOOLKG, build_in_process
from tests.support.cli_runner import run_in_process
from tests.support.endpoint_helpers import free_port
from tests.support.live_helpers import wait_listening
from tests.support.mcp_http import bearer_client

CALL_SERVER = Path(__file__).resolve().parents[1] / "mcp_servers" / "call_server.py"
FULL, SEARCHER, ALPHA_ONLY = (
    "full-" + os.urandom(12).hex(),
    "search-" + os.urandom(12).hex(),
    "alpha-" + os.urandom(12).hex(),
)

pytestmark = pytest.mark.slow


def _initialize(id_: int = 1) -> bytes:
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    return json.dumps({"jsonrpc": "2.0", "id": id_, "method": "initialize", "params": params}).encode()


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("auth")
    server = {"command": sys.executable, "args": [str(CALL_SERVER)]}
    config = root / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"alpha": server, "beta": server}}))
    summary = build_in_process([config], root / "store", links=False)
    assert summary.exit_code == 0, [str(q) for q in summary.quarantined]
    return root / "store"


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens.toml"
    path.write_text(
        "# three clients\n"
        f'[[token]]\nname = "agent"\ntoken = "{FULL}"\nscope = "call"\n\n'
        f'[[token]]\nname = "browser"\ntoken = "{SEARCHER}"\nscope = "search"\n\n'
        f'[[token]]\nname = "alpha-bot"\ntoken = "{ALPHA_ONLY}"\nscope = "call:alpha"\n'
    )
    path.chmod(0o600)
    return path


@contextmanager
def mcp_http(store: Path, tmp_path: Path, *flags: str, env: dict[str, str] | None = None):
    """`toolkg mcp --transport http` on a free loopback port; yields (port, a function returning its stderr so far)."""
    port = free_port()
    log = tmp_path / f"stderr-{port}"
    inherited = {key: value for key, value in os.environ.items() if key != "TOOLKG_MCP_TOKEN"}
    environment = {**inherited, "TOOLKG_CONFIG_DIR": str(tmp_path / "config"), **(env or {})}
    # The same user as the build, with a config folder of its own for the tokens: it carries the configurations
    # that user's build named (toolkg.live.named), without which call_tool starts no server from the store.
    named = Path(os.environ["TOOLKG_CONFIG_DIR"]) / "live-configurations.json"
    if named.exists():
        (tmp_path / "config").mkdir(exist_ok=True)
        (tmp_path / "config").chmod(0o700)  # as toolkg makes it
        shutil.copy(named, tmp_path / "config" / named.name)
    with log.open("w") as errors:
        process = subprocess.Popen(
            [str(TOOLKG), "mcp", "--store", str(store), "--transport", "http", "--bind", f"127.0.0.1:{port}", *flags],
            stdout=subprocess.DEVNULL,
            stderr=errors,
            env=environment,
        )
        try:
            wait_listening(port, process, 60)
            yield port, log.read_text
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def post(port: int, body: bytes, token: str | None = None, session: str | None = None, **headers: str):
    """(status, headers, body text) of one POST /mcp."""
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    if session:
        sent["Mcp-Session-Id"] = session
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/mcp", body=body, headers=sent)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
    finally:
        conn.close()


def session_of(port: int, token: str) -> str:
    """A session opened (initialize, then initialized) with ``token``; its id."""
    status, headers, body = post(port, _initialize(), token)
    assert status == 200, body
    session = headers["mcp-session-id"]
    done = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    assert post(port, done, token, session)[0] == 202
    return session


def call(port: int, token: str | None, calls, *, mode: str = "legacy"):
    """Connect the SDK's client with ``Authorization: Bearer token`` (none if None), run ``calls(client)``."""

    async def run():
        async with bearer_client(f"http://127.0.0.1:{port}/mcp", token, mode) as client:
            return await calls(client)

    return anyio.run(run)


def _text(result) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def _echo(server: str):
    async def calls(client):
        return await client.call_tool("call_tool", {"id": f"{server}::echo", "arguments": {"text": "hi"}})

    return calls


async def _search(client):
    found = await client.call_tool("search_tools", {"query": "say the text back", "k": 3})
    return [t["id"] for t in found.structured_content["tools"]]


def test_without_a_valid_token_every_request_gets_401(store, tmp_path, token_file) -> None:
    with mcp_http(store, tmp_path, "--allow-call", "--token-file", str(token_file)) as (port, stderr):
        status, headers, body = post(port, _initialize())
        assert status == 401, body
        assert headers["www-authenticate"].startswith("Bearer ") and 'realm="toolkg"' in headers["www-authenticate"]
        assert "Authorization: Bearer" in body and "\n" not in body.strip()
        for wrong in ("nope", FULL + "x", FULL[:-1], FULL.upper(), f"{FULL} {FULL}", ""):
            status, headers, body = post(port, _initialize(), wrong)
            assert status == 401, (wrong, status, body)
            assert 'error="invalid_token"' in headers["www-authenticate"] or not wrong.strip(), headers
        status, _, _ = post(port, _initialize(), Authorization=f"Basic {FULL}")
        assert status == 401
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/mcp", headers={"Accept": "text/event-stream"})
        assert conn.getresponse().status == 401
        conn.close()

        with pytest.raises(Exception) as refused:  # noqa: PT011 - whatever the SDK raises, it must not connect
            call(port, None, _search)
        assert "401" in str(refused.value) or "Authorization" in repr(refused.value)
        assert "alpha::echo" in call(port, FULL, _search)
        for server in ("alpha", "beta"):
            answer = call(port, FULL, _echo(server))
            assert not answer.is_error and answer.structured_content == {"text": "hi", "times": 1}, _text(answer)
    log = stderr()
    for token in (FULL, SEARCHER, ALPHA_ONLY):
        assert token not in log


def test_scoped_tokens_search_or_call_only_their_servers(store, tmp_path, token_file) -> None:
    with mcp_http(store, tmp_path, "--allow-call", "--token-file", str(token_file)) as (port, _):
        assert "alpha::echo" in call(port, SEARCHER, _search)  # a search-only token searches

        async def try_call(client):
            from mcp import MCPError

            try:
                return await client.call_tool("call_tool", {"id": "alpha::echo", "arguments": {"text": "hi"}})
            except MCPError as refused:  # the JSON-RPC error of the 403, as the SDK's client raises it
                return refused

        refused = call(port, SEARCHER, try_call)
        assert "may search" in str(refused) and "scope" in str(refused), refused

        session = session_of(port, SEARCHER)
        request = {"name": "call_tool", "arguments": {"id": "alpha::echo", "arguments": {"text": "hi"}}}
        body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": request}).encode()
        status, headers, text = post(port, body, SEARCHER, session)
        assert status == 403, text
        assert (
            'error="insufficient_scope"' in headers["www-authenticate"]
            and 'scope="call"' in headers["www-authenticate"]
        )
        assert json.loads(text)["error"]["message"].startswith("this client's token may search")
        batch = json.dumps([json.loads(body)]).encode()  # the same call in a JSON-RPC batch is no way round it
        status, _, text = post(port, batch, SEARCHER, session)
        assert status in (400, 403) and "echo" not in text.replace("alpha::echo", ""), text

        # a session belongs to the token that opened it: another token cannot borrow the full token's session
        borrowed = session_of(port, FULL)
        search = {"name": "search_tools", "arguments": {"query": "say the text back"}}
        searching = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": search}).encode()
        assert post(port, searching, FULL, borrowed)[0] == 200
        status, _, text = post(port, searching, SEARCHER, borrowed)
        assert status == 404 and "alpha::echo" not in text, text

        mine = call(port, ALPHA_ONLY, _echo("alpha"))
        assert not mine.is_error and mine.structured_content == {"text": "hi", "times": 1}
        other = call(port, ALPHA_ONLY, _echo("beta"))
        assert other.is_error and "beta" in _text(other) and "call:alpha" in _text(other), _text(other)
        assert "\n" not in _text(other)


async def _listed_and_callable(client):
    listed = {t.name for t in (await client.list_tools()).tools}
    found = await client.call_tool("search_tools", {"query": "say the text back", "k": 10})
    return listed, {t["id"]: t["callable"] for t in found.structured_content["tools"]}


def test_call_tool_is_listed_and_tools_callable_only_as_the_token_allows(store, tmp_path, token_file) -> None:
    with mcp_http(store, tmp_path, "--allow-call", "--token-file", str(token_file)) as (port, _):
        listed, full = call(port, FULL, _listed_and_callable)
        assert "call_tool" in listed and full["alpha::echo"] is True and full["beta::echo"] is True
        listed, searcher = call(port, SEARCHER, _listed_and_callable)
        assert "call_tool" not in listed and listed >= {"search_tools", "get_tool"}  # search scope: no calls offered
        assert "alpha::echo" in searcher and not any(searcher.values()), searcher
        listed, alpha_only = call(port, ALPHA_ONLY, _listed_and_callable)
        assert "call_tool" in listed and alpha_only["alpha::echo"] is True and alpha_only["beta::echo"] is False
        assert alpha_only.get("alpha::wipe") is not True  # destructive: not without --allow-destructive
    with mcp_http(store, tmp_path, "--token-file", str(token_file)) as (port, _):  # no --allow-call
        listed, full = call(port, FULL, _listed_and_callable)
        assert "call_tool" not in listed and not any(full.values())


def test_the_default_token_file_is_created_0600_and_reused(store, tmp_path) -> None:
    config = tmp_path / "config"
    expected = config / "mcp-tokens.toml"
    with mcp_http(store, tmp_path, "--allow-call") as (port, stderr):
        assert stat.S_IMODE(expected.stat().st_mode) == 0o600
        assert stat.S_IMODE(config.stat().st_mode) == 0o700
        shown = run_in_process("mcp", "--show-token", env={"TOOLKG_CONFIG_DIR": str(config)})
        token = shown.stdout.strip()
        assert shown.returncode == 0 and len(token) >= 32 and token in expected.read_text(), shown.stderr
        assert not call(port, token, _echo("alpha")).is_error
        first = stderr()
    assert str(expected) in first and "Authorization: Bearer" in first and "created" in first
    assert token not in first

    with mcp_http(store, tmp_path, "--allow-call") as (port, stderr):
        assert not call(port, token, _echo("beta")).is_error  # the same token after a restart
        assert post(port, _initialize())[0] == 401
        again = stderr()
    assert str(expected) in again and "created" not in again and token not in again


def test_a_token_from_the_environment(store, tmp_path) -> None:
    token = "env-" + os.urandom(16).hex()
    with mcp_http(store, tmp_path, env={"TOOLKG_MCP_TOKEN": token}) as (port, stderr):
        assert post(port, _initialize(), token)[0] == 200
        assert post(port, _initialize(), FULL)[0] == 401
    assert "TOOLKG_MCP_TOKEN" in stderr() and token not in stderr()
    assert not (tmp_path / "config" / "mcp-tokens.toml").exists()


def test_no_auth_warns_and_only_on_loopback(store, tmp_path) -> None:
    with mcp_http(store, tmp_path, "--no-auth", "--allow-call") as (port, stderr):
        assert post(port, _initialize())[0] == 200
        assert not call(port, None, _echo("alpha")).is_error
    warning = [line for line in stderr().splitlines() if "warning" in line]
    assert warning and "--no-auth" in warning[0] and "call" in warning[0]

    port = free_port()
    refused = run_in_process(
        "mcp", "--store", str(store), "--transport", "http", "--bind", f"0.0.0.0:{port}", "--allow-remote", "--no-auth"
    )
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "--no-auth" in refused.stderr and "0.0.0.0" in refused.stderr


def test_a_token_file_others_can_read_is_refused(store, tmp_path, token_file) -> None:
    token_file.chmod(0o644)
    done = run_in_process("mcp", "--store", str(store), "--transport", "http", "--token-file", str(token_file))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "chmod 600" in done.stderr and FULL not in done.stderr
