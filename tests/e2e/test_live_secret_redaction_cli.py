"""A live server's configured secret is written nowhere, even when the server copies it into its answers (issue 40).

Our echo server (tests/mcp_servers/echo_secret_server.py) puts the key it was started with into its
serverInfo, instructions, tool names, descriptions, schemas (keys and values) and annotations, or, told to
fail, into its standard error and its error answer. After `toolkg build CONFIG`, `toolkg export` and
`toolkg report`, no byte of anything toolkg wrote (every file of the store, binary ones included: Oxigraph's,
snapshots, caches, the retrieval index, the run's summary and quarantine; the Prefect server's home), nor
anything it printed, holds the key, in any letter case.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import _PREFECT_HOME
from tests.support.live_helpers import files_containing, start_toy_http

pytestmark = pytest.mark.slow

ECHO = Path(__file__).resolve().parents[1] / "mcp_servers" / "echo_secret_server.py"


def test_a_secret_the_server_echoes_is_in_no_file_toolkg_writes_nor_in_what_it_prints(cli, tmp_path: Path) -> None:
    # Lowercase letters and digits: one token to BM25's tokenizer, so an index term would be the key itself.
    env_secret = "sk" + os.urandom(12).hex()
    arg_secret = "ak" + os.urandom(12).hex()
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "echo": {"command": sys.executable, "args": [str(ECHO)], "env": {"ECHO_SECRET": env_secret}},
                    "echo-failing": {
                        "command": sys.executable,
                        "args": [str(ECHO), "--fail"],
                        "env": {"ECHO_SECRET": env_secret},
                    },
                    "echo-arg": {"command": sys.executable, "args": [str(ECHO), "--api-key", arg_secret]},
                }
            }
        )
    )
    store = tmp_path / "store"
    done = cli("build", str(config), "--store", str(store), "--json", "--set", "live.timeout=30")
    assert done.returncode == 3, done.stderr  # echo-failing is quarantined
    summary = json.loads(done.stdout)
    assert {s["server"]: s["status"] for s in summary["live"]} == {
        "echo": "new",
        "echo-failing": "failed",
        "echo-arg": "new",
    }
    [failure] = summary["quarantined"]
    assert "revoked" in failure["reason"] and "[redacted]" in failure["reason"], failure["reason"]

    text = cli("build", str(config), "--store", str(store), "--set", "live.timeout=30")  # the text summary too
    assert text.returncode == 3, text.stderr
    exported = tmp_path / "out" / "export.jsonld"
    exported.parent.mkdir()
    export = cli("export", "--store", str(store), "--json", "-o", str(exported))
    assert export.returncode == 0, export.stderr
    report = cli("report", "--store", str(store), "-o", str(tmp_path / "out" / "report.html"))
    assert report.returncode == 0, report.stderr

    printed = "".join(run.stdout + run.stderr for run in (done, text, export, report))
    written = [store, tmp_path / "out", Path(_PREFECT_HOME)]
    for secret in (env_secret, arg_secret):
        for form in (secret, secret.upper(), secret[2:]):  # the key, as a tokenizer might fold it, its core
            assert form not in printed
            assert files_containing(written, form) == []
    assert files_containing([tmp_path], env_secret) == [str(config)]  # where the user wrote it, and only there

    # What the servers said is kept, with the key blanked: the redaction is not a dropped listing.
    graph = exported.read_text(encoding="utf-8")
    assert "Authenticated as [redacted]; call with care." in graph and "signed with [redacted]" in graph
    snapshot = json.loads((store / "live" / "echo.json").read_text(encoding="utf-8"))
    assert snapshot["serverInfo"]["title"] == "Echo server of [redacted]"
    assert snapshot["instructions"] == "Use the key [redacted] for everything."


def test_a_key_in_an_address_path_is_in_no_file_nor_output_nor_the_server_id(cli, tmp_path: Path) -> None:
    """Hosted MCP servers take their key in the path (``.../s/KEY/mcp``): given as an address or in a
    configuration's url, it reaches the server and nothing toolkg writes or prints (snapshot, summary, store,
    Prefect's database and parameters), and the server id is the host and the path without it."""
    key = os.urandom(16).hex()
    process, url = start_toy_http("--path-prefix", f"/s/{key}")
    try:
        keyed = url.replace("/mcp", f"/s/{key}/mcp")
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"hosted": {"url": keyed}}}))
        store = tmp_path / "store"
        done = cli("build", keyed, str(config), "--store", str(store), "--json", "--no-links")
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        assert {s["server"]: s["status"] for s in summary["live"]} == {"127.0.0.1-s-mcp": "new", "hosted": "new"}
        assert all("/s/[redacted]/mcp" in s["reached"] for s in summary["live"]), summary["live"]
        again = cli("build", keyed, str(config), "--store", str(store), "--no-links")  # the text output too
        assert again.returncode == 0, again.stderr
        printed = done.stdout + done.stderr + again.stdout + again.stderr
        assert key not in printed
        assert files_containing([store, Path(_PREFECT_HOME)], key) == []
        assert files_containing([tmp_path], key) == [str(config)]  # where the user wrote it, and only there
    finally:
        process.kill()
        process.wait()


def test_a_server_json_reads_only_the_variables_named_with_env(cli, tmp_path: Path) -> None:
    """A registry server.json is its author's: a header named after any variable (AWS_SECRET_ACCESS_KEY) must
    not make toolkg read and send it. Only ``--env NAME`` variables are read, and their values are stored
    nowhere (summary, snapshot, store, Prefect)."""
    token, aws = "tk" + os.urandom(12).hex(), "aws" + os.urandom(12).hex()
    log = tmp_path / "headers.jsonl"
    process, url = start_toy_http(env={"TOY_REQUIRED_TOKEN": token, "TOY_HEADER_LOG": str(log)})
    try:
        entry = {
            "$schema": "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json",
            "name": "io.example/toy",
            "version": "1.0.0",
            "description": "Toy bookings.",
            "remotes": [
                {
                    "type": "streamable-http",
                    "url": url,
                    "headers": [
                        {"name": "Authorization", "value": "Bearer {TOY_TOKEN}", "variables": {"TOY_TOKEN": {}}},
                        {"name": "AWS_SECRET_ACCESS_KEY", "description": "nothing a toy needs"},
                    ],
                }
            ],
        }
        registry = tmp_path / "server.json"
        registry.write_text(json.dumps(entry))
        env = {"TOY_TOKEN": token, "AWS_SECRET_ACCESS_KEY": aws}
        unnamed = cli("build", str(registry), "--store", str(tmp_path / "s1"), "--json", "--no-links", env=env)
        assert unnamed.returncode == 3, unnamed.stderr
        [server] = json.loads(unnamed.stdout)["live"]
        assert server["status"] == "not listable" and "--env TOY_TOKEN" in server["reason"], server
        assert not log.exists() or aws not in log.read_text()

        store = tmp_path / "s2"
        named = cli(
            "build", str(registry), "--store", str(store), "--json", "--no-links", "--env", "TOY_TOKEN", env=env
        )
        assert named.returncode == 0, named.stderr
        [server] = json.loads(named.stdout)["live"]
        assert server["status"] == "new" and server["tools"] == 5, server
        sent = [json.loads(line) for line in log.read_text().splitlines()]
        assert sent and all(h.get("authorization") == f"Bearer {token}" for h in sent)
        assert not any(aws in json.dumps(h) or "aws_secret_access_key" in h for h in sent)
        printed = unnamed.stdout + unnamed.stderr + named.stdout + named.stderr
        for secret in (token, aws):
            assert secret not in printed
            assert files_containing([tmp_path / "s1", store, Path(_PREFECT_HOME)], secret) == []
    finally:
        process.kill()
        process.wait()
