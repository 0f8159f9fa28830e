"""What a person sees in a terminal: tables that fit 120 columns and align CJK text, `toolkg retrieve`'s header
line, and the eval plot's ticks and lines.

The CLI runs in a subprocess with COLUMNS=200 (a wide window: tables still stop at 120) against a store built
from the retrieval test catalog plus a server whose tool names are Japanese, very long, or look like markup.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from tests.conftest import CASES
from tests.support.terminal import LONG, assert_fits, second_column
from toolkg.cli.render import MAX_WIDTH

QUERIES = CASES / "retrieval" / "queries.jsonl"
CJK_SERVER = {
    "server_name": "tokyo",
    "tools": [
        {"name": "天気_予報", "description": f"東京の天気予報を返します。{LONG}", "inputSchema": {"type": "object"}},
        {"name": "路線検索", "description": "電車の経路を検索します。", "inputSchema": {"type": "object"}},
        {"name": "[bold]x", "description": "Looks like markup :smile: [red]", "inputSchema": {"type": "object"}},
        {"name": "a_tool_name_that_goes_on_" + "and_on_" * 12, "description": LONG, "inputSchema": {"type": "object"}},
    ],
}
TOOLS = "SELECT ?name ?id ?d WHERE { ?t a tk:Tool ; tk:name ?name ; tk:identifier ?id ; dcterms:description ?d }"


# -- the CLI -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory, built_store):
    folder = tmp_path_factory.mktemp("terminal") / "catalog"
    folder.mkdir()
    shutil.copy(CASES / "retrieval" / "catalog.json", folder / "catalog.json")
    (folder / "tokyo.json").write_text(json.dumps(CJK_SERVER, ensure_ascii=False), encoding="utf-8")
    return built_store(folder)  # the tests only read it


@pytest.fixture
def wide(cli):
    """The CLI in a 200-column window."""
    return lambda *args: cli(*args, env={"COLUMNS": "200"})


def test_stats_query_and_eval_fit_120_columns_in_a_wide_window(wide, store, tmp_path):
    outputs = {
        "stats": wide("stats", "--store", str(store)),
        "query": wide("query", "--store", str(store), TOOLS),
        "eval": wide("eval", "--store", str(store), "--queries", str(QUERIES), "--out", str(tmp_path), "-q"),
    }
    for name, result in outputs.items():
        assert result.returncode == 0, (name, result.stderr)
        assert_fits(result.stdout, MAX_WIDTH, name)
    assert "天気_予報" in outputs["query"].stdout and "…" in outputs["query"].stdout  # cut, not wrapped
    lines = outputs["query"].stdout.split("\n")  # header, rule, one line per tool, '(N rows)', ''
    assert lines[-2] == f"({len(lines) - 4} rows)" and len(lines) - 4 == 16
    # eval: a row per metric and method, a column per K (the default 3,5,10,20), then the latencies
    text = outputs["eval"].stdout
    assert re.search(r"^metric +method +@3 +@5 +@10 +@20$", text, re.M)
    assert re.search(r"^map +grtf +(\d\.\d{3} +){3}\d\.\d{3}$", text, re.M)
    assert re.search(r"^method +p50 ms +p95 ms +mean ms$", text, re.M)
    assert set(json.loads((tmp_path / "eval.json").read_text())["methods"]) == {
        "auto", "bm25", "dense", "hybrid", "grtf", "ego", "agent"
    }  # fmt: skip


def test_a_narrow_window_narrows_the_tables(cli, store):
    result = cli("query", "--store", str(store), TOOLS, env={"COLUMNS": "70"})
    assert result.returncode == 0, result.stderr
    assert_fits(result.stdout, 70, "query")


def test_cjk_names_align_and_markup_prints_as_written(wide, store):
    result = wide("query", "--store", str(store), TOOLS + " ORDER BY ?name")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")[:-2]  # the table, without '(N rows)' and the final ''
    assert any("東京" in line or "天気_予報" in line for line in lines) and any("路線検索" in line for line in lines)
    assert len({second_column(line) for line in lines}) == 1  # the id column starts at one terminal column
    assert any(line.startswith("[bold]x  ") for line in lines)  # no markup read into it
    assert "Looks like markup :smile: [red]" in result.stdout


def test_retrieve_prints_a_header_line_above_its_table(cli, store):
    result = cli("retrieve", "--store", str(store), "--method", "bm25", "-k", "3", "--step", "city", "天気 forecast")
    assert result.returncode == 0, result.stderr
    header, columns, rule, *rest = result.stdout.split("\n")
    snapshot = (store / "snapshots" / "CURRENT").read_text().strip()
    assert header == (
        f'retrieve "天気 forecast" + 1 step with bm25, k=3, store {store.resolve()} (snapshot {snapshot}, 16 tools)'
    )
    assert columns.split() == ["rank", "server", "tool", "score", "why"] and set(rule) == {"-", " "}
    assert re.match(r" +1  tokyo +天気_予報 +\d\.\d{4}  ", rest[0])
    assert rest[-2].startswith("servers: ")
