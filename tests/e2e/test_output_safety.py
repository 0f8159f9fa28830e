"""Names from manifests never forge or break a terminal line: every printed item is one line.

A catalog's tool, server and file names, descriptions and dependency reasons hold newlines, carriage
returns, ESC[2J and U+202E; the build's summary, the quarantine listing, deps, query tables, stats,
retrieve and the HTML report show them escaped (toolkg.display.one_line), one line each; --json, --format csv
and export's RDF carry none of them raw either.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.terminal import ESC, FORGED, RAW, RLO, assert_one_line_each
from toolkg.display import width
from toolkg.summary import BuildSummary


def write_catalog(folder: Path) -> None:
    folder.mkdir()
    mcp = {
        "server_name": f"evil\nserver{ESC}{RLO}\rname",
        "tools": [
            {  # a name with line breaks: quarantined (or loaded) under that name
                "name": f"x\n{FORGED}",
                "description": f"Reads\r\nthe {ESC} secret{RLO} file.\n{FORGED}",
                "inputSchema": {"type": "object", "properties": {f"path{ESC}": {"type": "string"}}},
            },
            {"name": f"bad\n{FORGED}{ESC}{RLO}", "inputSchema": 5},  # malformed: quarantined
            {"name": f"x\n{FORGED}", "description": "the same name again", "inputSchema": {"type": "object"}},
            {"name": f"東京_weather\r{ESC}", "description": "天気\n", "inputSchema": {"type": "object"}},
        ],
    }
    (folder / "evil.json").write_text(json.dumps(mcp), encoding="utf-8")
    shop = {  # names a strict reader still accepts (bidi controls), descriptions with line breaks
        "server_name": f"shop{RLO}",
        "tools": [
            {
                "name": f"get_order{RLO}",
                "description": f"Gets an order by its order id.\n{FORGED} {ESC}",
                "inputSchema": {
                    "type": "object",
                    "properties": {"order_id": {"type": "string", "description": f"The id{ESC}\nof the order"}},
                    "required": ["order_id"],
                },
            },
            {
                "name": "create_order",
                "description": f"Creates an order and returns the order id {RLO}.\r\n{FORGED}",
                "inputSchema": {"type": "object", "properties": {"item": {"type": "string"}}},
                "outputSchema": {"type": "object", "properties": {"order_id": {"type": "string"}}},
            },
            {"name": "東京_weather", "description": "天気 forecast for 東京", "inputSchema": {"type": "object"}},
        ],
    }
    (folder / "shop.json").write_text(json.dumps(shop), encoding="utf-8")
    toollinkos = [  # declared dependencies whose reasons (the evidence deps prints) break lines
        {"name": f"pay{RLO}", "description": "Pays an order.", "parameters": [], "func_type": "regular",
         "depends_on": [{"name": "login", "dependence_type": "TOOL_DIRECTLY_DEPENDS_ON", "parameter_name": "",
                         "reason": f"needs a session\n{FORGED}{ESC}"}]},
        {"name": "login", "description": "Logs in.", "parameters": [], "func_type": "core", "depends_on": []},
    ]  # fmt: skip
    (folder / "links.json").write_text(json.dumps(toollinkos), encoding="utf-8")
    (folder / f"broken\n{FORGED}{ESC}.json").write_text("{not json", encoding="utf-8")


@pytest.fixture(scope="module")
def evil_store(tmp_path_factory, prefect_api):
    """The build of the hostile catalog, and its store."""
    from tests.support.cli_runner import run_in_process

    root = tmp_path_factory.mktemp("evil")
    write_catalog(root / "catalog")
    # The cli fixture's run (in-process, its own piped streams), by hand: that fixture is per test and this build
    # is made once for the module.
    result = run_in_process(
        "build", str(root / "catalog"), "--store", str(root / "store"), env={"PREFECT_API_URL": prefect_api}
    )
    return root, result


# -- the real commands on a hostile catalog ----------------------------------------------------------


def test_build_summary_and_quarantine_are_one_line_per_item(evil_store):
    root, result = evil_store
    assert result.returncode == 3, result.stderr  # finished, with quarantined inputs
    assert "Traceback" not in result.stderr
    assert_one_line_each(result.stdout, "stdout")
    assert_one_line_each(result.stderr, "stderr")
    (run,) = (root / "store" / "runs").iterdir()
    summary = BuildSummary.model_validate_json((run / "summary.json").read_text(encoding="utf-8"))
    lines = result.stdout.rstrip("\n").split("\n")
    assert len(lines) == 1 + len(summary._lines("  - ")) + 1  # title, the summary's lines, the wall time
    listed = lines.index(f"  quarantined: {len(summary.quarantined)} item(s)")
    assert lines[listed + 1 : -1] == [f"    - {item}" for item in summary.quarantined]
    assert len(summary.quarantined) >= 3  # the broken file, the malformed tool, the duplicate (or bad) names
    records = [json.loads(line) for line in (run / "quarantine.jsonl").read_text(encoding="utf-8").splitlines()]
    broken = str(root / "catalog" / f"broken\n{FORGED}{ESC}.json")
    assert any(r["source"] == broken for r in records)  # the file keeps its exact name in the JSON


def test_read_commands_print_one_line_per_item(evil_store, cli):
    root, _ = evil_store
    store = str(root / "store")
    outputs = {
        "deps": cli("deps", "--store", store, "--links"),
        "query": cli(
            "query", "--store", store, "SELECT ?id ?d WHERE { ?t tk:identifier ?id ; dcterms:description ?d }"
        ),
        "stats": cli("stats", "--store", store),
        "retrieve": cli("retrieve", "--store", store, "--method", "bm25", "-k", "5", "order"),
    }
    for name, result in outputs.items():
        assert result.returncode == 0 and "Traceback" not in result.stderr, (name, result.stderr)
        assert_one_line_each(result.stdout, name)
        assert_one_line_each(result.stderr, name)
    assert "get_order\\u202e" in outputs["retrieve"].stdout
    assert f"needs a session\\n{FORGED}\\x1b[2J" in outputs["deps"].stdout  # the declared edge's evidence
    rows = outputs["query"].stdout.split("\n")  # header, rule, one line per tool, '(N rows)', ''
    assert rows[-2] == f"({len(rows) - 4} rows)" and len(rows) - 4 >= 3
    starts = set()
    for row in rows[:-2]:  # the second column starts at the same terminal column on every line
        first = row[: row.index("  ")]
        starts.add(width(first) + len(row[len(first) :]) - len(row[len(first) :].lstrip(" ")))
    assert len(starts) == 1


def test_report_escapes_names_and_keeps_them_on_their_line(evil_store, cli):
    root, _ = evil_store
    result = cli("report", "--store", str(root / "store"))
    assert result.returncode == 0, result.stderr
    html = (Path(result.stdout.split()[1])).read_text(encoding="utf-8")
    assert ESC not in html and RLO not in html and "\x00" not in html
    assert "<script" not in html.lower()
    assert f"broken\\n{FORGED}\\x1b[2J.json" in html  # shown escaped, as in the terminal


def test_machine_outputs_carry_no_raw_control_character(evil_store, cli):
    """--json, --format csv and export's RDF: the hostile texts escaped (JSON, RDF: \\uXXXX; CSV: one_line's
    escapes), the JSON and RDF reading back to the exact texts."""
    import pyoxigraph

    root, _ = evil_store
    store = str(root / "store")
    descriptions = "SELECT ?d WHERE { ?t a tk:Tool ; dcterms:description ?d }"
    outputs = {
        "query --json": cli("query", "--store", store, "--json", descriptions),
        "query --format csv": cli("query", "--store", store, "--format", "csv", descriptions),
        "construct --json": cli("query", "--store", store, "--json", "CONSTRUCT { ?t dcterms:description ?d } "
                                "WHERE { ?t a tk:Tool ; dcterms:description ?d }"),
        "retrieve --json": cli("retrieve", "--store", store, "--json", "--method", "bm25", "-k", "5", "order"),
        "deps --json": cli("deps", "--store", store, "--json"),
        "stats --json": cli("stats", "--store", store, "--json"),
        **{f"export {f}": cli("export", "--store", store, "--format", f) for f in ("ttl", "nq", "jsonld")},
        # the build's own summary: quarantined items' names and raw input carry the hostile bytes
        "build --json": cli("build", str(root / "catalog"), "--store", str(root / "store-json"), "--json"),
    }  # fmt: skip
    for name, result in outputs.items():
        assert result.returncode == (3 if name == "build --json" else 0), (name, result.stderr)
        raw = re.compile(RAW.pattern.replace("\x00-\x09", "\x00-\x08")).search(result.stdout)  # tab lays out Turtle
        assert raw is None, f"{name}: raw {raw.group()!r} in {result.stdout[max(raw.start() - 60, 0) : raw.end()]!r}"
    assert json.loads(outputs["build --json"].stdout)["quarantined"]  # still the summary object, read back
    texts = {b["d"]["value"] for b in json.loads(outputs["query --json"].stdout)["results"]["bindings"]}
    assert f"Gets an order by its order id.\n{FORGED} {ESC}" in texts  # the exact text, read back
    assert f"Gets an order by its order id.\n{FORGED} \\x1b[2J" in outputs["query --format csv"].stdout  # CSV quotes \n
    quads = pyoxigraph.parse(outputs["export nq"].stdout.encode(), format=pyoxigraph.RdfFormat.N_QUADS)
    assert texts <= {quad.object.value for quad in quads}
    assert f"needs a session\n{FORGED}{ESC}" in {
        e["evidence"] for e in json.loads(outputs["deps --json"].stdout)["edges"]
    }
