"""toolkg mcp's bearer tokens (toolkg.toolsearch.auth) and the HTTP gate's pieces (http_gate): token files and
their scopes, where tokens come from, the constant-time match, and call_tool's own scope check."""

from __future__ import annotations

import hmac
import os
import stat
import threading
from pathlib import Path

import anyio
import pytest
from starlette.types import Message

from toolkg.errors import ConfigError, RequestError
from toolkg.toolsearch import auth
from toolkg.toolsearch.auth import Scope, Token, Tokens, create_token_file, load_tokens, read_token_file
from toolkg.toolsearch.http_gate import _buffered, _calls_call_tool

A, B, C = "a" * 20, "b" * 20 + "-_.~+/=", "C" * 43


def _file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "tokens.toml"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_scopes_parse_and_refuse() -> None:
    assert Scope.parse("search") == Scope(calls=False)
    assert Scope.parse(" call ") == Scope(calls=True)
    assert Scope.parse("call:alpha,beta") == Scope(True, frozenset({"alpha", "beta"}))
    assert str(Scope.parse("call:beta, alpha")) == "call:alpha,beta"
    for bad in ("", "all", "call:", "call: , ", "search:alpha", "calls", "CALL"):
        with pytest.raises(ConfigError, match="scope"):
            Scope.parse(bad)
    assert Scope.parse("call").call_refusal("x::y", "x") is None
    assert Scope.parse("call:x").call_refusal("x::y", "x") is None
    refusal = Scope.parse("call:x").call_refusal("z::y", "z")
    assert refusal is not None and refusal.startswith("z::y:") and "'z'" in refusal and "call:x" in refusal
    assert "may search but not call" in (Scope.parse("search").call_refusal("x::y", "x") or "")


def test_a_token_file_with_entries(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        f'[[token]]\nname = "agent"\ntoken = "{A}"\nscope = "call"\n'
        f'[[token]]\ntoken = "{B}"\nscope = "call:alpha"\n'
        f'[[token]]\nname = "ui"\ntoken = "{C}"\nscope = "search"\n',
    )
    entries, first = read_token_file(path)
    assert first == A
    assert [(e.name, str(e.scope)) for e in entries] == [("agent", "call"), ("token-2", "call:alpha"), ("ui", "search")]
    assert len({e.principal for e in entries}) == 3
    assert all(A not in repr(e) and B not in repr(e) for e in entries)  # a repr or log line never shows a secret


def test_a_bare_token_file_has_scope_call(tmp_path: Path) -> None:
    entries, first = read_token_file(_file(tmp_path, f"  {B}\n"))
    assert first == B and [str(e.scope) for e in entries] == ["call"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no \\[\\[token\\]\\]"),
        ("# nothing\n", "no \\[\\[token\\]\\]"),
        ('token = "x"\n', "no \\[\\[token\\]\\]"),
        ("[[token\n", "not TOML"),
        (f'[[token]]\ntoken = "{A}"\n', "needs token and scope"),
        ('[[token]]\ntoken = "short"\nscope = "call"\n', "at least 16"),
        ('[[token]]\ntoken = "has space in it, long enough"\nscope = "call"\n', "at least 16"),
        (f'[[token]]\ntoken = "{A}"\nscope = "admin"\n', "scope"),
        (f'[[token]]\ntoken = "{A}"\nscope = "call"\n[[token]]\ntoken = "{A}"\nscope = "search"\n', "repeats"),
        (f'[[token]]\nname="x"\ntoken="{A}"\nscope="call"\n[[token]]\nname="x"\ntoken="{B}"\nscope="call"', "repeats"),
        ("short\n", "at least 16"),
    ],
)
def test_a_bad_token_file_is_one_line_without_the_secret(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as refused:
        read_token_file(_file(tmp_path, text))
    assert "\n" not in str(refused.value) and A not in str(refused.value) and B not in str(refused.value)


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o666])
def test_a_token_file_others_can_read_is_refused(tmp_path: Path, mode: int) -> None:
    with pytest.raises(ConfigError, match="chmod 600"):
        read_token_file(_file(tmp_path, f"{A}\n", mode))


def test_tokens_come_from_the_flag_then_the_environment_then_the_default_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TOOLKG_CONFIG_DIR", str(tmp_path / "config"))
    path = _file(tmp_path, f"{A}\n")
    assert load_tokens(path, {"TOOLKG_MCP_TOKEN": B}).first_secret == A
    from_env = load_tokens(None, {"TOOLKG_MCP_TOKEN": B})
    assert from_env.first_secret == B and from_env.path is None and from_env.source == "TOOLKG_MCP_TOKEN"
    with pytest.raises(ConfigError, match="TOOLKG_MCP_TOKEN"):
        load_tokens(None, {"TOOLKG_MCP_TOKEN": "weak"})
    assert not (tmp_path / "config").exists()
    made = load_tokens(None, {})
    default = tmp_path / "config" / "mcp-tokens.toml"
    assert made.created and made.path == default and str(default) in made.source
    assert stat.S_IMODE(default.stat().st_mode) == 0o600 and stat.S_IMODE(default.parent.stat().st_mode) == 0o700
    again = load_tokens(None, {})
    assert not again.created and again.first_secret == made.first_secret and len(made.first_secret) >= 40


def test_the_default_file_is_created_once_when_servers_start_together(tmp_path: Path) -> None:
    path = tmp_path / "config" / "mcp-tokens.toml"
    created: list[bool] = []
    threads = [threading.Thread(target=lambda: created.append(create_token_file(path))) for _ in range(8)]
    old = os.umask(0)  # even a permissive umask gives a private file
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        os.umask(old)
    assert created.count(True) == 1
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["mcp-tokens.toml"]  # no scratch file left


def test_a_token_matches_exactly_and_every_entry_is_compared(monkeypatch) -> None:
    tokens = Tokens(tuple(Token.make(f"t{i}", s, Scope(True), i) for i, s in enumerate((A, B, C))), "test")
    first, last = tokens.match(A), tokens.match(C)
    assert first is not None and first.name == "t0" and last is not None and last.name == "t2"
    for wrong in (A[:-1], A + "a", A.upper(), " " + A, "", B.replace("=", "")):
        assert tokens.match(wrong) is None, wrong
    compared: list[int] = []
    real = hmac.compare_digest

    def counted(x: bytes, y: bytes) -> bool:  # sha256 digests
        compared.append(len(x) + len(y))
        return real(x, y)

    monkeypatch.setattr(hmac, "compare_digest", counted)
    for presented in (A, C, "nothing"):
        compared.clear()
        tokens.match(presented)
        assert compared == [64, 64, 64]  # all three entries, digests of one length, wherever the match is


def test_call_tool_refuses_without_a_scope_or_outside_it() -> None:
    from toolkg.toolsearch.mcp_server import _within_scope
    from toolkg.toolsearch.service import ToolSearch

    class Search:
        def get_tool(self, tool):  # a bare name resolves to its server's tool, as ToolSearch resolves it
            found = tool if "::" in tool else f"alpha::{tool}"
            return {"id": found, "server": found.partition("::")[0]}

    search: ToolSearch = Search()  # type: ignore[assignment]  # a stand-in: _within_scope calls get_tool only

    with pytest.raises(RequestError, match="no token scope"):
        _within_scope(search, "alpha::echo")  # fail closed: a request without a scope calls nothing
    marker = auth.caller_scope.set(Scope.parse("call:alpha"))
    try:
        assert _within_scope(search, "echo") == "alpha::echo"  # the id checked is the id called
        with pytest.raises(RequestError, match="call:alpha"):
            _within_scope(search, "beta::echo2")
    finally:
        auth.caller_scope.reset(marker)
    marker = auth.caller_scope.set(Scope.parse("search"))
    try:
        with pytest.raises(RequestError, match="may search"):
            _within_scope(search, "alpha::echo")
    finally:
        auth.caller_scope.reset(marker)


def test_the_gate_reads_call_tool_requests_and_replays_the_body() -> None:
    call = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{}}}'
    assert _calls_call_tool(call) and _calls_call_tool(b"[" + call + b"]")
    assert not _calls_call_tool(call.replace(b"call_tool", b"search_tools"))
    assert not _calls_call_tool(b"{not json") and not _calls_call_tool(b'"x"') and not _calls_call_tool(b"[1, null]")

    async def replayed() -> tuple[bytes, list[Message]]:
        parts = [call[:10], call[10:40], call[40:]]
        messages = [{"type": "http.request", "body": p, "more_body": i < 2} for i, p in enumerate(parts)]

        async def receive():
            return messages.pop(0) if messages else {"type": "http.disconnect"}

        buffered = await _buffered(receive)
        assert buffered is not None  # the body came whole
        body, again = buffered
        return body, [await again(), await again()]

    body, after = anyio.run(replayed)
    assert body == call and after[0] == {"type": "http.request", "body": call, "more_body": False}
    assert after[1]["type"] == "http.disconnect"
