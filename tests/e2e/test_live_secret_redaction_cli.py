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
from tests.support.live_helpers import files_containing

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
