"""Toxic flows through the CLI: `toolkg build` of a server whose web fetcher, file reader and message poster are
joined by declared dependencies, then `toolkg stats` and the saved query `toxic-flows` in subprocesses."""

from __future__ import annotations

import json

from tests.integration.test_toxic_flow_build import ADD, FETCH, POST, READ, write_assistant


def test_build_then_stats_and_the_saved_query_show_the_flow(cli, tmp_path):
    folder, store = write_assistant(tmp_path / "catalog", [FETCH, READ, POST, ADD]), tmp_path / "store"
    built = cli("build", str(folder), "--store", str(store))
    assert built.returncode == 0, built.stderr
    assert "1 toxic-flow" in built.stdout  # the summary's findings line

    stats = cli("stats", "--store", str(store), "--json")
    assert stats.returncode == 0, stats.stderr
    flagged = json.loads(stats.stdout)["findings"]["flagged"]
    flows = [f for entry in flagged for f in entry["findings"] if f["kind"] == "toxic-flow"]
    assert len(flows) == 1 and flows[0]["severity"] == "high" and flows[0]["where"] == "toolset server assistant"
    assert [p["role"] for p in flows[0]["flow"]] == ["untrusted", "private", "sink"]
    assert flows[0]["flow"][1]["tool"] == "assistant::read_file"

    table = cli("stats", "--store", str(store))
    assert "toxic-flow" in table.stdout and "joined by" in table.stdout

    query = cli("query", "--store", str(store), "--saved", "toxic-flows", "-p", "server=assistant", "--format", "json")
    assert query.returncode == 0, query.stderr
    rows = json.loads(query.stdout)
    rows = rows["results"]["bindings"] if isinstance(rows, dict) else rows
    value = lambda row, key: row[key]["value"] if isinstance(row[key], dict) else row[key]  # noqa: E731
    assert rows and value(rows[0], "private") == "assistant::read_file" and value(rows[0], "joined") == "true"
