"""The CLI as a user meets it, against a temporary store: in-process through ``toolkg.cli.main`` (the ``cli``
fixture), and the installed `toolkg` script in a subprocess for the build's summary (``cli_process``)."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil

import pytest
from pyoxigraph import Dataset, RdfFormat, parse

from tests.conftest import CASES, ROOT
from tests.support.cli_runner import run_in_process


def _catalog(folder):
    folder.mkdir()
    for name in ("openai_tools.json", "petstore.yaml", "mcp_bing.json"):
        shutil.copy(CASES / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def built_once(prefect_api, tmp_path_factory):
    """A store built by `toolkg build` from three small manifests, once for the module: tests only READ it."""
    root = tmp_path_factory.mktemp("built")
    folder, store = _catalog(root / "catalog"), root / "store"
    result = run_in_process("build", str(folder), "--store", str(store), env={"PREFECT_API_URL": prefect_api})
    assert result.returncode == 0, result.stderr
    return store, folder, result


@pytest.fixture
def built(cli, tmp_path):
    """The same store built for one test, which changes it (or its catalog)."""
    folder, store = _catalog(tmp_path / "catalog"), tmp_path / "store"
    result = cli("build", str(folder), "--store", str(store))
    assert result.returncode == 0, result.stderr
    return store, folder, result


def test_build_prints_the_summary(cli_process, tmp_path):
    """The installed script in a subprocess: its summary, and nothing of Prefect's on stderr."""
    result = cli_process("build", str(_catalog(tmp_path / "catalog")), "--store", str(tmp_path / "store"))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "graph: 3 servers, 8 tools" in out
    assert "manifests: 3 seen, 3 new, 0 changed, 0 unchanged (skipped), 0 removed" in out
    assert re.search(
        # the pipeline's order: canonicalize is catalog-wide and runs after the load
        r"timings: ingest [\d.]+s, extract-semantic [\d.]+s, extract [\d.]+s, validate [\d.]+s, load [\d.]+s, "
        r"canonicalize [\d.]+s",
        out,
    )
    assert "extraction: offline: 8 tools" in out
    assert re.search(r"memory: peak [\d,]+ MiB over the build's processes \(during [a-z-]+\)", out)
    assert "quarantined: none" in out and "Traceback" not in result.stderr


def test_build_exit_code_3_lists_quarantined_inputs(cli, built):
    store, folder, _ = built
    (folder / "bad.json").write_text("{not json")
    result = cli("build", str(folder), "--store", str(store))
    assert result.returncode == 3
    assert "bad.json: [parse] invalid JSON at line 1, column 2" in result.stdout
    assert "3 unchanged (skipped)" in result.stdout


def test_build_usage_errors_are_one_line(cli, tmp_path):
    missing = cli("build", str(tmp_path / "nope"), "--store", str(tmp_path / "s"))
    assert missing.returncode == 2 and missing.stderr.strip().count("\n") == 0
    assert "no such file or directory" in missing.stderr
    (tmp_path / "empty").mkdir()
    nothing = cli("build", str(tmp_path / "empty"), "--store", str(tmp_path / "s"))
    assert nothing.returncode == 2 and "no manifest files" in nothing.stderr
    bad_flag = cli("build", "x", "--format", "csv")
    assert bad_flag.returncode == 2 and "invalid choice" in bad_flag.stderr


def test_query_table_json_csv_file_and_stdin(cli, built_once, tmp_path):
    store, _, _ = built_once
    sparql = "SELECT ?id WHERE { ?t a tk:Tool ; tk:identifier ?id } ORDER BY ?id"
    table = cli("query", "--store", str(store), sparql)
    assert table.returncode == 0 and "bing-cn-mcp::bing_search" in table.stdout and "(8 rows)" in table.stdout
    as_json = json.loads(cli("query", "--store", str(store), "--format", "json", sparql).stdout)
    ids = [b["id"]["value"] for b in as_json["results"]["bindings"]]
    assert ids[0] == "Swagger-Petstore::createPet" and len(ids) == 8
    rows = list(csv.reader(io.StringIO(cli("query", "--store", str(store), "--format", "csv", sparql).stdout)))
    assert rows[0] == ["id"] and len(rows) == 9
    query_file = tmp_path / "q.rq"
    query_file.write_text("ASK { ?t tk:name 'get_weather' }")
    assert cli("query", "--store", str(store), "-f", str(query_file)).stdout.strip() == "true"
    assert cli("query", "--store", str(store), "-", input="ASK { ?t tk:name 'nope' }").stdout.strip() == "false"


def test_query_errors(cli, built_once, tmp_path):
    store, _, _ = built_once
    bad = cli("query", "--store", str(store), "SELECT WHERE {")
    assert (
        bad.returncode == 2 and bad.stderr.startswith("toolkg: error: invalid SPARQL") and "Traceback" not in bad.stderr
    )
    no_store = cli("query", "--store", str(tmp_path / "none"), "ASK {}")
    assert no_store.returncode == 1 and "no toolkg store" in no_store.stderr


@pytest.mark.parametrize(
    ("fmt", "rdf_format"),
    [("nq", RdfFormat.N_QUADS), ("trig", RdfFormat.TRIG), ("ttl", RdfFormat.TURTLE), ("jsonld", RdfFormat.JSON_LD)],
)
def test_export_round_trips(cli, built_once, tmp_path, fmt, rdf_format):
    store, _, _ = built_once
    out = tmp_path / f"graph.{fmt}"
    result = cli("export", "--store", str(store), "--format", fmt, "-o", str(out))
    assert result.returncode == 0, result.stderr
    quads = list(parse(path=str(out), format=rdf_format))
    if rdf_format.supports_datasets:
        graphs = {str(q.graph_name) for q in quads}
        assert "<https://w3id.org/toolkg/id/graph/server/Swagger-Petstore>" in graphs
    assert any(getattr(q, "object", None) is not None and q.object.value == "get_weather" for q in quads)
    assert len(Dataset(quads)) > 100


def test_stats_json_and_table(cli, built_once):
    store, _, _ = built_once
    data = json.loads(cli("stats", "--store", str(store), "--json").stdout)
    assert data["totals"]["tools"] == 8 and data["by_class"]["tk:Tool"] == 8
    petstore = next(s for s in data["servers"] if s["server"] == "Swagger-Petstore")
    assert (petstore["tools"], petstore["category"]) == (4, "pets")
    table = cli("stats", "--store", str(store)).stdout
    assert "by predicate:" in table and "Swagger-Petstore" in table


def test_every_command_has_help_and_is_in_the_readme(cli):
    readme = (ROOT / "README.md").read_text()
    top = cli("--help")
    assert top.returncode == 0
    commands = re.findall(r"^    (\w+)\s", top.stdout, flags=re.M)
    assert set(commands) >= {"build", "query", "export", "stats"}
    for command in commands:
        help_text = cli(command, "--help")
        assert help_text.returncode == 0 and "usage: toolkg " + command in help_text.stdout
        assert f"toolkg {command}" in readme, f"README does not document 'toolkg {command}'"


def test_json_is_the_same_as_format_json_everywhere(cli, built_once):
    store = str(built_once[0])
    sparql = "SELECT ?id WHERE { ?t a tk:Tool ; tk:identifier ?id } ORDER BY ?id"
    for command in (("query", sparql), ("stats",), ("deps", "--links")):
        short = cli(*command, "--store", store, "--json")
        assert short.returncode == 0, short.stderr
        assert short.stdout == cli(*command, "--store", store, "--format", "json").stdout
        json.loads(short.stdout)
    assert (
        cli("export", "--store", store, "--json").stdout == cli("export", "--store", store, "--format", "jsonld").stdout
    )
    ranked = cli("retrieve", "--store", store, "--method", "bm25", "--k", "1", "--json", "weather")
    assert ranked.returncode == 0, ranked.stderr
    assert ranked.stdout == cli("retrieve", "--store", store, "--method", "bm25", "-k", "1", "--format", "json",
                                "weather").stdout  # fmt: skip
    assert [t["tool"] for t in json.loads(ranked.stdout)["tools"]] == ["get_weather"]
    both = cli("query", "--store", store, "--format", "csv", "--json", sparql)
    assert both.returncode == 2 and "not allowed with argument --format" in both.stderr


def test_build_reads_a_config_file_and_set_and_prints_json(cli, built, tmp_path):
    store, folder, _ = built
    config = tmp_path / "build.toml"
    config.write_text("[build]\nforce = true\n\n[inference]\nmin_confidence = 0.6\n")
    forced = cli("build", str(folder), "--store", str(store), "--config", str(config), "--json", "-q")
    assert forced.returncode == 0, forced.stderr
    summary = json.loads(forced.stdout)  # standard output is the summary alone
    assert summary["manifests_seen"] == 3 and summary["skipped"] == []
    assert "wall time" in forced.stderr
    kept = cli("build", str(folder), "--store", str(store), "--config", str(config), "--set", "build.force=false",
               "--json", "-q")  # fmt: skip
    assert kept.returncode == 0, kept.stderr
    assert len(json.loads(kept.stdout)["skipped"]) == 3
    bad = cli("build", str(folder), "--store", str(store), "--set", "links.nope=1")
    assert bad.returncode == 2 and bad.stderr.startswith("toolkg: error: unknown setting 'links.nope'")
