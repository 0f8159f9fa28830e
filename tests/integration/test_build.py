"""The build flow end to end: sample catalogs, incremental reruns, pruning, failures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import CASES, DATA
from toolkg.extractors.manifests.formats import DEPENDENCE_KINDS
from toolkg.ontology import iris
from toolkg.store.oxigraph_store import ToolStore

# The bundled samples (1,100 tools) take ~30 s to build: `make test-fast` leaves these out, `make test` runs them.
SLOW = pytest.mark.slow


@pytest.fixture(scope="module")
def sample(prefect_api, tmp_path_factory):
    """Both bundled sample catalogs built into one store (once for this module)."""
    from toolkg.flows.build import build_catalog

    store = tmp_path_factory.mktemp("sample") / "store"
    summary = build_catalog(
        paths=[str(DATA / "livemcpbench" / "tools.json"), str(DATA / "toollinkos")], store_dir=str(store)
    )
    return ToolStore(store), summary


@SLOW
def test_sample_catalogs_build_clean(sample):
    _, summary = sample
    assert summary.quarantined == [] and summary.exit_code == 0
    assert len(summary.new) == 3 and summary.totals["tools"] == 527 + 573


@SLOW
def test_livemcpbench_has_70_servers_and_527_tools(sample):
    store, _ = sample
    (row,) = store.select("""SELECT (COUNT(DISTINCT ?s) AS ?servers) (COUNT(DISTINCT ?t) AS ?tools)
        WHERE { ?s tk:sourceFormat "mcp-catalog" ; tk:hasTool ?t . ?t tk:ownedBy ?s }""")
    assert (int(row["servers"].value), int(row["tools"].value)) == (70, 527)


@SLOW
def test_toollinkos_has_573_tools_and_every_declared_dependency(sample):
    store, _ = sample
    expected = set()
    for name in ("core_tools", "regular_tools"):
        for tool in json.loads((DATA / "toollinkos" / f"{name}.json").read_text()):
            for dep in tool["depends_on"]:
                expected.add(
                    (
                        tool["name"],
                        dep["name"],
                        DEPENDENCE_KINDS[dep["dependence_type"]],
                        dep["parameter_name"] or "",
                        dep["reason"],
                    )
                )
    rows = store.select("""
        SELECT ?consumer ?producer ?kind ?param ?reason WHERE {
          ?c tk:sourceFormat "toollinkos" ; tk:hasTool ?t . ?t tk:name ?consumer ; tk:qualifiedDependency ?d .
          ?d tk:onTool/tk:name ?producer ; tk:dependencyKind ?k ; tk:reason ?reason ; tk:basis tk:Declared .
          OPTIONAL { ?d tk:parameterName ?param }
          BIND(STRAFTER(STR(?k), "#") AS ?kind) }""")
    found = {
        (
            r["consumer"].value,
            r["producer"].value,
            r["kind"].value,
            r["param"].value if "param" in r else "",
            r["reason"].value,
        )
        for r in rows
    }
    assert found == expected and len(expected) == 1495  # 1,496 entries, one an exact repeat
    (count,) = store.select('SELECT (COUNT(?t) AS ?n) WHERE { ?t a tk:Tool ; tk:ownedBy/tk:sourceFormat "toollinkos" }')
    assert int(count["n"].value) == 573
    # the parameter a dependency feeds is linked when the consumer declares it
    (linked,) = store.select("SELECT (COUNT(?d) AS ?n) WHERE { ?d tk:viaParameter ?p . ?p a tk:Parameter }")
    assert int(linked["n"].value) > 500


@SLOW
def test_dependency_paths_cross_files(sample):
    store, _ = sample
    rows = store.select("""SELECT DISTINCT ?name WHERE {
        ?t tk:identifier "regular_tools::share_location_via_email" ; tk:dependsOn+ ?d . ?d tk:name ?name }""")
    names = {r["name"].value for r in rows}
    assert {"get_current_location", "get_location_service_status"} <= names


@SLOW
def test_shacl_passes_on_both_sample_catalogs(sample):
    from toolkg.store.validation import Validator

    store, _ = sample
    triples = [
        t for g in store.named_graphs() if g.value.startswith(iris.SERVER_GRAPH_PREFIX) for t in store.graph_triples(g)
    ]
    with Validator(workers=1) as validator:
        assert validator.violations(triples) == []


@SLOW
def test_provenance_records_the_run(sample):
    store, summary = sample
    rows = store.select(
        """SELECT ?id ?path ?sha ?start ?end ?agent WHERE { GRAPH ?g {
        ?run tk:runId ?id ; prov:startedAtTime ?start ; prov:endedAtTime ?end ; prov:wasAssociatedWith ?agent ;
             prov:qualifiedUsage [ tk:sourcePath ?path ; tk:sha256 ?sha ] } }""",
        {"id": _lit(summary.run_id)},
    )
    assert len(rows) == 3 and all(len(r["sha"].value) == 64 for r in rows)
    assert "toolkg-offline" in rows[0]["agent"].value


def _lit(value: str):
    from pyoxigraph import Literal

    return Literal(value)


# --- incremental behaviour on small catalogs ------------------------------------------------------


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    folder = tmp_path / "catalog"
    folder.mkdir()
    for name in ("openai_tools.json", "petstore.yaml", "mcp_bing.json"):
        shutil.copy(CASES / name, folder / name)
    return folder


def graph_quads(store_dir: Path, server_id: str) -> set:
    return set(ToolStore(store_dir).graph_triples(iris.server_graph(server_id)))


def test_rerun_without_changes_reprocesses_nothing(build, catalog, store_dir):
    first = build([catalog], store_dir)
    assert len(first.new) == 3 and first.exit_code == 0
    before = ToolStore(store_dir).quads()
    second = build([catalog], store_dir)
    assert (second.new, second.changed, len(second.skipped)) == ([], [], 3)
    assert second.loaded_tools == 0
    assert ToolStore(store_dir).quads() == before
    # The catalog-wide stages ran once; their graphs (even an empty one) say so.
    assert not {"canonicalize", "infer", "link"} & second.stage_seconds.keys()


def test_a_store_built_by_other_rules_is_brought_up_to_date(build, catalog, store_dir, monkeypatch):
    from toolkg.flows.stages.infer import Infer

    build([catalog], store_dir)
    # as if toolkg's inference rules changed after the store was built: only that stage runs again
    monkeypatch.setattr(Infer, "fingerprint", lambda self: "new rules")
    again = build([catalog], store_dir)
    assert "infer" in again.stage_seconds and not {"canonicalize", "link"} & again.stage_seconds.keys()
    assert len(again.skipped) == 3 and again.loaded_tools == 0  # no manifest is inference's to redo


def test_new_code_in_a_per_manifest_stage_rebuilds_every_manifest_once(build, catalog, store_dir, monkeypatch):
    from toolkg.flows.steps import Validate

    build([catalog], store_dir)
    # as if the SHACL validation step's code changed: what every manifest's graphs went through
    monkeypatch.setattr(Validate, "fingerprint", lambda self: "new validation")
    again = build([catalog], store_dir)
    assert len(again.rebuilt) == 3 and again.skipped == [] and again.changed == [] and again.tools == []
    assert again.loaded_tools > 0
    third = build([catalog], store_dir)  # the records now hold the new code's fingerprint
    assert len(third.skipped) == 3 and third.rebuilt == [] and third.loaded_tools == 0


@pytest.mark.slow
def test_changed_manifest_replaces_only_its_graph(build, catalog, store_dir):
    build([catalog], store_dir)
    untouched = graph_quads(store_dir, "Swagger-Petstore"), graph_quads(store_dir, "bing-cn-mcp")
    doc = json.loads((catalog / "openai_tools.json").read_text())
    doc[0]["function"]["description"] = "Current weather, now with humidity."
    doc.pop()  # get_forecast leaves the manifest
    (catalog / "openai_tools.json").write_text(json.dumps(doc))
    summary = build([catalog], store_dir)
    assert summary.changed == [str(catalog / "openai_tools.json")] and len(summary.skipped) == 2
    assert (graph_quads(store_dir, "Swagger-Petstore"), graph_quads(store_dir, "bing-cn-mcp")) == untouched
    store = ToolStore(store_dir)
    rows = store.select(
        "SELECT ?name ?d WHERE { ?t tk:ownedBy/tk:identifier 'openai_tools' ; tk:name ?name ."
        " OPTIONAL { ?t dcterms:description ?d } }"
    )
    assert [(r["name"].value, r["d"].value) for r in rows] == [("get_weather", "Current weather, now with humidity.")]


def test_prune_retracts_deleted_manifests_only_when_asked(build, catalog, store_dir):
    build([catalog], store_dir)
    (catalog / "mcp_bing.json").unlink()
    kept = build([catalog], store_dir)
    assert kept.removed == [] and graph_quads(store_dir, "bing-cn-mcp")
    pruned = build([catalog], store_dir, prune=True)
    assert pruned.removed == [str(catalog / "mcp_bing.json")]
    assert graph_quads(store_dir, "bing-cn-mcp") == set()
    assert str(catalog / "mcp_bing.json") not in ToolStore(store_dir).manifest_records()


def test_force_rebuilds_everything(build, catalog, store_dir):
    build([catalog], store_dir)
    summary = build([catalog], store_dir, force=True)
    # every manifest read again; none changed (their bytes are those the last run read), and no tool did
    assert len(summary.rebuilt) == 3 and summary.skipped == [] and summary.changed == [] and summary.tools == []


def test_malformed_manifests_are_quarantined_while_others_load(build, catalog, store_dir):
    (catalog / "broken.json").write_text('{"tools": [')
    (catalog / "empty.json").write_text("")
    (catalog / "latin1.json").write_bytes('{"tools": [{"name": "café"}]}'.encode("latin-1"))
    summary = build([catalog], store_dir)
    assert summary.exit_code == 3 and len(summary.new) == 3
    reasons = {Path(q.source).name: q.reason for q in summary.quarantined}
    assert set(reasons) == {"broken.json", "empty.json", "latin1.json"}
    assert reasons["empty.json"] == "file is empty"
    lines = (store_dir / "runs" / summary.run_id / "quarantine.jsonl").read_text().splitlines()
    assert {json.loads(line)["reason"] for line in lines} == set(reasons.values())


def test_a_manifest_that_turns_bad_keeps_its_previous_graph(build, catalog, store_dir):
    build([catalog], store_dir)
    before = graph_quads(store_dir, "openai_tools")
    (catalog / "openai_tools.json").write_text("[{]")
    summary = build([catalog], store_dir)
    assert summary.exit_code == 3 and graph_quads(store_dir, "openai_tools") == before


@pytest.mark.slow
def test_failure_in_the_middle_of_loading_leaves_the_previous_graph_intact(build, catalog, store_dir, monkeypatch):
    build([catalog], store_dir)
    before = graph_quads(store_dir, "Swagger-Petstore")
    for name, edit in (("openai_tools.json", "Weather, v2."), ("petstore.yaml", "A sample pet store API, v2.")):
        path = catalog / name
        path.write_text(
            path.read_text()
            .replace("Get the current weather for a city.", edit)
            .replace("A sample pet store API.", edit)
        )

    from toolkg.store import oxigraph_store

    real = oxigraph_store._ntriples

    def corrupt_petstore(triples):
        text = real(triples)
        # A broken statement half-way through the pet store's INSERT DATA: the update must fail as a whole.
        return text + "\n<broken" if "Swagger-Petstore" in text else text

    monkeypatch.setattr(oxigraph_store, "_ntriples", corrupt_petstore)
    summary = build([catalog], store_dir)
    assert summary.exit_code == 3
    (failed,) = [q for q in summary.quarantined if q.stage == "load"]
    assert failed.source.endswith("petstore.yaml") and failed.reason.startswith("store write failed")
    assert summary.changed == [str(catalog / "openai_tools.json")]
    assert graph_quads(store_dir, "Swagger-Petstore") == before


def test_dependency_on_a_tool_in_a_later_manifest_resolves_when_it_arrives(build, tmp_path, store_dir):
    folder = tmp_path / "tl"
    folder.mkdir()
    shutil.copy(CASES / "toollinkos" / "regular.json", folder / "regular.json")
    first = build([folder], store_dir)
    assert first.exit_code == 3 and {q.raw for q in first.quarantined} == {
        "get_current_location",
        "check_internet_connection",
    }
    shutil.copy(CASES / "toollinkos" / "core.json", folder / "core.json")
    second = build([folder], store_dir)
    assert second.exit_code == 0 and second.reprocessed == [str(folder / "regular.json")]
    rows = ToolStore(store_dir).select(
        "SELECT ?p WHERE { ?t tk:name 'find_nearby_restaurants' ; tk:dependsOn/tk:name ?p }"
    )
    assert {r["p"].value for r in rows} == {"get_current_location", "check_internet_connection"}


def test_two_manifests_claiming_one_server_do_not_overwrite_each_other(build, tmp_path, store_dir):
    folder = tmp_path / "dupe"
    folder.mkdir()
    for name in ("a.json", "b.json"):
        (folder / name).write_text(
            json.dumps(
                {"server_name": "same", "tools": [{"name": f"tool_{name[0]}", "inputSchema": {"type": "object"}}]}
            )
        )
    summary = build([folder], store_dir)
    (clash,) = summary.quarantined
    assert clash.source.endswith("b.json") and "already defined by" in clash.reason
    rows = ToolStore(store_dir).select("SELECT ?n WHERE { ?t a tk:Tool ; tk:name ?n }")
    assert [r["n"].value for r in rows] == ["tool_a"]
