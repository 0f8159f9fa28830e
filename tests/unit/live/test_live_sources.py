"""Reading MCP client configurations, registry server.json entries and server addresses (toolkg.live.sources).

The examples follow each client's documented format: Claude Desktop's ``claude_desktop_config.json``,
Cursor's ``~/.cursor/mcp.json`` (url + headers, ``${env:NAME}``), Claude Code's ``.mcp.json`` (``type``),
VS Code's ``.vscode/mcp.json`` (``servers``, ``inputs``) and settings.json (``mcp.servers``), and the MCP
Registry's ``server.json`` as its API returns it (Brave Search's entry, 2025-10 schema).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkg.live import find_sources, live_inputs
from toolkg.live.sources import config_kind, parse_address, read_config, sniff_config
from toolkg.summary import _live_lines, skipped_live_line

CLAUDE_DESKTOP = {
    "mcpServers": {
        "filesystem": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"],
        },
        "github": {
            "command": "docker",
            "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_realLookingSecret123"},
        },
    }
}
BRAVE_REGISTRY = {
    "server": {
        "$schema": "https://static.modelcontextprotocol.io/schemas/2025-10-17/server.schema.json",
        "name": "io.github.brave/brave-search-mcp-server",
        "description": "Brave Search MCP Server: web results, images, videos, rich results, AI summaries, and more.",
        "repository": {"url": "https://github.com/brave/brave-search-mcp-server", "source": "github"},
        "version": "2.0.58",
        "packages": [
            {
                "registryType": "npm",
                "registryBaseUrl": "https://registry.npmjs.org",
                "identifier": "@brave/brave-search-mcp-server",
                "version": "2.0.58",
                "transport": {"type": "stdio"},
                "environmentVariables": [
                    {
                        "description": "Your API key for the service",
                        "isRequired": True,
                        "format": "string",
                        "isSecret": True,
                        "name": "BRAVE_API_KEY",
                    }
                ],
            }
        ],
    },
    "_meta": {"io.modelcontextprotocol.registry/official": {"status": "active"}},
}


def test_claude_desktop_servers_are_stdio_commands_with_their_env_kept_secret() -> None:
    found = read_config("claude_desktop_config.json", CLAUDE_DESKTOP)
    by_name = {s.name: s for s in found.servers}
    assert set(by_name) == {"filesystem", "github"} and not found.unlistable
    github = by_name["github"]
    assert (github.transport, github.command, github.args[:2]) == ("stdio", "docker", ("run", "-i"))
    assert github.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_realLookingSecret123"}
    assert "ghp_realLookingSecret123" not in repr(github) + json.dumps(github.public())
    assert github.public() == {"transport": "stdio", "command": "docker"}


def test_cursor_and_claude_code_http_entries_expand_environment_variables(monkeypatch) -> None:
    monkeypatch.setenv("LINEAR_TOKEN", "lin_secret_456")
    cursor = {
        "mcpServers": {
            "linear": {"url": "https://mcp.linear.app/mcp", "headers": {"Authorization": "Bearer ${env:LINEAR_TOKEN}"}},
            "legacy": {"url": "https://example.com/sse"},
            "missing": {"url": "https://example.com/mcp", "headers": {"X-Key": "${NOT_SET_ANYWHERE}"}},
            "code": {"type": "sse", "url": "https://example.com/events"},
        }
    }
    found = read_config("mcp.json", cursor)
    by_name = {s.name: s for s in found.servers}
    assert by_name["linear"].transport == "http" and by_name["linear"].headers == {
        "Authorization": "Bearer lin_secret_456"
    }
    assert by_name["legacy"].transport == "sse" and by_name["code"].transport == "sse"
    assert "lin_secret_456" in by_name["linear"].secrets()
    [missing] = found.unlistable
    assert missing.name == "missing" and "NOT_SET_ANYWHERE" in missing.reason


def test_vscode_servers_with_an_input_prompt_are_reported_not_listable() -> None:
    vscode: dict[str, Any] = {
        "inputs": [
            {"type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key", "password": True}
        ],
        "servers": {
            "perplexity": {
                "type": "stdio",
                "command": "npx",
                "args": ["-y", "server-perplexity-ask"],
                "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}"},
            },
            "fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]},
            "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"},
        },
    }
    found = read_config(".vscode/mcp.json", vscode)
    assert {s.name for s in found.servers} == {"fetch", "github"}
    [prompt] = found.unlistable
    assert prompt.name == "perplexity" and "${input:perplexity-key}" in prompt.reason
    settings_json = {"editor.fontSize": 14, "mcp": {"servers": {"fetch": vscode["servers"]["fetch"]}}}
    assert [s.name for s in read_config("settings.json", settings_json).servers] == ["fetch"]


def test_registry_entries_derive_a_command_or_say_why_not(monkeypatch) -> None:
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    found = read_config("server.json", BRAVE_REGISTRY)
    assert not found.servers
    assert "BRAVE_API_KEY" in found.unlistable[0].reason
    monkeypatch.setenv("BRAVE_API_KEY", "bsk_123456")
    unnamed = read_config("server.json", BRAVE_REGISTRY)  # set, but not named: a server.json may not read it
    assert not unnamed.servers and "--env BRAVE_API_KEY" in unnamed.unlistable[0].reason
    found = read_config("server.json", BRAVE_REGISTRY, env_names=["BRAVE_API_KEY"])
    if shutil.which("npx") is None:
        assert "npx, which is not on PATH" in found.unlistable[0].reason
        return
    [spec] = found.servers
    assert (spec.name, spec.command, spec.args) == (
        "brave-search-mcp-server",
        "npx",
        ("-y", "@brave/brave-search-mcp-server@2.0.58"),
    )
    assert spec.env == {"BRAVE_API_KEY": "bsk_123456"} and spec.metadata["version"] == "2.0.58"
    remote = {
        "name": "com.example/notes",
        "remotes": [
            {
                "type": "streamable-http",
                "url": "https://{tenant}.example.com/mcp",
                "variables": {"tenant": {"default": "acme"}},
                "headers": [{"name": "Authorization", "value": "Bearer tok", "isSecret": True}],
            }
        ],
    }
    listed = read_config("registry.json", {"servers": [{"server": remote}, BRAVE_REGISTRY]})
    spec = {s.name: s for s in listed.servers}["notes"]
    assert spec.url == "https://acme.example.com/mcp" and spec.headers == {"Authorization": "Bearer tok"}
    unrunnable = {"name": "io.example/x", "packages": [{"registryType": "nuget", "identifier": "X.Mcp"}]}
    assert "no runner" in read_config("server.json", unrunnable).unlistable[0].reason


def test_addresses() -> None:
    stdio = parse_address("mcp+stdio:uvx mcp-server-git --repository '/path with space'")
    assert (stdio.name, stdio.command, stdio.args) == (
        "uvx",
        "uvx",
        ("mcp-server-git", "--repository", "/path with space"),
    )
    http = parse_address("https://mcp.example.com/v1/mcp")
    assert (http.transport, http.name) == ("http", "mcp.example.com-v1-mcp")
    assert parse_address("mcp+sse:http://127.0.0.1:9000/sse").transport == "sse"
    for bad in ("https://user:pw@example.com/mcp", "https://example.com/mcp?api_key=1", "mcp+stdio:"):
        with pytest.raises(ValueError):
            parse_address(bad)


def test_only_live_sources_are_sniffed_as_such(tmp_path: Path) -> None:
    openapi = {
        "openapi": "3.1.0",
        "info": {"title": "x", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": {},
    }
    manifest = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}], "servers": {"note": "not a config"}}
    for name, document, kind in (
        ("openapi.json", openapi, None),
        ("tools.json", manifest, "client"),
        ("claude.json", CLAUDE_DESKTOP, "client"),
        ("server.json", BRAVE_REGISTRY, "registry"),
    ):
        path = tmp_path / name
        path.write_text(json.dumps(document))
        assert config_kind(document) == kind, name
    (tmp_path / "tools.json").write_text(json.dumps({"tools": []}))
    sources, rest, configurations = find_sources([str(tmp_path)])
    assert configurations == {str((tmp_path / "claude.json").resolve()), str((tmp_path / "server.json").resolve())}
    assert rest == [str(tmp_path)] and sniff_config(tmp_path / "openapi.json") is None
    assert not sources.servers and not sources.unlistable  # found in a folder: never listed (issue 40)
    sources, rest, _ = find_sources([str(tmp_path / "claude.json"), str(tmp_path)])  # named: listed
    assert {s.name for s in sources.servers} == {"filesystem", "github"} and rest == [str(tmp_path)]


def test_configurations_found_in_a_folder_are_skipped_with_how_to_list_them(tmp_path: Path, monkeypatch) -> None:
    vendor = tmp_path / "catalog" / "vendor" / "pkg"
    vendor.mkdir(parents=True)
    (vendor / "package-settings.json").write_text(
        json.dumps({"mcpServers": {**CLAUDE_DESKTOP["mcpServers"], "env-file": {"command": "x", "envFile": "/etc/x"}}})
    )
    (vendor / "server.json").write_text(json.dumps(BRAVE_REGISTRY))
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    inputs = live_inputs(["catalog"])
    assert not inputs.sources.servers and not inputs.sources.unlistable  # not even read: no envFile, no variable
    assert inputs.rest == ["catalog"] and len(inputs.configurations) == 2
    skipped = {Path(s.configuration).name: s for s in inputs.skipped}
    settings = skipped["package-settings.json"]
    assert (settings.configuration, settings.kind, settings.servers, settings.folder) == (
        str(Path("catalog/vendor/pkg/package-settings.json")),
        "client",
        3,
        "catalog",
    )
    assert (skipped["server.json"].kind, skipped["server.json"].servers) == ("registry", 1)
    assert skipped_live_line(asdict(settings)) == (
        f"skipped live configuration {settings.configuration} (3 servers): found in catalog, not named: name the "
        "file as a PATH to list its servers (a build starts servers only from configurations named on its command "
        "line)"
    )
    named = live_inputs(["catalog", "catalog/vendor/pkg/server.json"])
    assert [Path(s.configuration).name for s in named.skipped] == ["package-settings.json"]
    assert [u.name for u in named.sources.unlistable] == ["io.github.brave/brave-search-mcp-server"]  # named: read


def test_summary_names_what_changed_per_server() -> None:
    lines = _live_lines(
        [
            {
                "server": "git",
                "status": "changed",
                "reached": "stdio mcp-server-git",
                "seconds": 1.5,
                "tools": 13,
                "added": ["git_tag"],
                "removed": [],
                "changed": ["git_log"],
            },
            {
                "server": "time",
                "status": "unchanged",
                "reached": "stdio mcp-server-time",
                "seconds": 0.9,
                "tools": 2,
                "added": [],
                "removed": [],
                "changed": [],
            },
            {
                "server": "hang",
                "status": "failed",
                "reached": "http http://h/mcp",
                "seconds": 60,
                "tools": 0,
                "added": [],
                "removed": [],
                "changed": [],
            },
        ],
        "- ",
    )
    assert lines[0] == "live MCP servers: 2 listed (1 changed, 1 unchanged), 1 failed"
    assert lines[1] == "- git [changed, stdio mcp-server-git, 1.50s]: added 1 (git_tag); changed 1 (git_log)"
    assert len(lines) == 2


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
_ENTRY_KEYS = st.sampled_from(
    [
        "command",
        "args",
        "env",
        "url",
        "headers",
        "type",
        "cwd",
        "disabled",
        "packages",
        "remotes",
        "name",
        "server",
        "transport",
        "envFile",
    ]
)


@settings(max_examples=300, deadline=None)
@pytest.mark.slow
@given(
    wrapper=st.sampled_from(["mcpServers", "servers", "registry", "registry-list"]),
    entries=st.dictionaries(
        st.text(min_size=1, max_size=8), st.dictionaries(_ENTRY_KEYS, _JSON, max_size=5), max_size=4
    ),
)
def test_any_configuration_is_read_entry_by_entry_without_raising(wrapper: str, entries: dict) -> None:
    document: dict[str, Any]  # a client's configuration, or a registry's
    if wrapper == "registry":
        document = {"name": "io.x/y", "packages": [e for e in entries.values()], "remotes": list(entries.values())}
    elif wrapper == "registry-list":
        document = {"servers": [{"server": {"name": n, **e}} for n, e in entries.items()]}
    else:
        document = {wrapper: entries}
    if config_kind(document) is None:
        return
    found = read_config("config.json", document)
    assert all("\n" not in u.reason for u in found.unlistable)
    for spec in found.servers:
        public = json.dumps(spec.public())
        assert spec.transport in ("stdio", "http", "sse")
        shown = spec.url + spec.command  # a secret may only appear where the user wrote it in plain sight
        assert not any(secret in public for secret in spec.secrets() if secret not in shown)
