"""Toxic flows in real builds: the audit stores each tool's role probabilities and one toxic-flow finding per
toolset (SHACL-valid, read back whole), the saved query finds the same flow from the stored roles, ``hide``
takes the sink away, and an incremental sync that removes the sink removes the flow as a rebuild would."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.conftest import build_in_process
from toolkg.flows.stages.audit import AuditInfo
from toolkg.ontology.graphs import AUDIT_GRAPH
from toolkg.store.findings import read_findings, read_roles
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.saved_queries import saved_query
from toolkg.store.validation import Validator
from toolkg.toolsearch.service import ToolSearch
from toolkg.toolsearch.trust import HiddenTool, TrustPolicy

pytestmark = pytest.mark.slow  # a build each


def _tool(name: str, description: str, params: dict[str, str], needs: Sequence[tuple[str, str]] = ()) -> dict:
    return {
        "name": name,
        "description": description,
        "parameters": [{"name": p, "type": "string", "required": True, "description": d} for p, d in params.items()],
        "depends_on": [
            {"name": target, "dependence_type": "TOOL_DIRECTLY_DEPENDS_ON", "parameter_name": parameter, "reason": "."}
            for target, parameter in needs
        ],
    }


FETCH = _tool("fetch_webpage", "Fetch a web page from any URL on the internet and return its text content.",
              {"url": "The URL of the web page to fetch."})  # fmt: skip
READ = _tool("read_file", "Read the complete contents of a file from the user's local file system.",
             {"path": "Path of the file to read."}, [("fetch_webpage", "")])  # fmt: skip
POST = _tool("post_message", "Post a message to a public channel.",
             {"channel": "Channel id.", "body": "The message body."}, [("read_file", "body")])  # fmt: skip
ADD = _tool("add", "Add two numbers.", {"a": "First number.", "b": "Second number."})


def write_assistant(folder: Path, tools: list[dict]) -> Path:
    """A ToolLinkOS-format server ``assistant`` (declared dependencies join its tools)."""
    folder.mkdir(exist_ok=True)
    (folder / "assistant.json").write_text(json.dumps(tools))
    return folder


def test_a_flow_joined_by_edges_is_stored_valid_queryable_and_hideable(tmp_path: Path) -> None:
    folder, store_dir = write_assistant(tmp_path / "catalog", [FETCH, READ, POST, ADD]), tmp_path / "store"
    summary = build_in_process([folder], store_dir, links=False)
    assert summary.exit_code == 0
    audit = summary.result(AuditInfo)
    assert audit is not None and audit.findings.by_kind.get("toxic-flow") == 1
    with ToolStore(store_dir) as store:
        found = read_findings(store)
        flows = [(tool, f) for tool, fs in found.items() for f in fs if f.kind == "toxic-flow"]
        assert len(flows) == 1
        sink, finding = flows[0]
        assert finding.severity == "high" and finding.where == "toolset server assistant"
        assert [p.role for p in finding.flow] == ["untrusted", "private", "sink"] and finding.flow[2].tool == sink
        assert finding.flow[1].tool == "assistant::read_file" and finding.path[0] == finding.flow[0].tool
        assert len(finding.path) >= 2 and finding.path[-1] == sink
        roles = read_roles(store)
        assert set(roles) == {"assistant::fetch_webpage", "assistant::read_file", "assistant::post_message",
                              "assistant::add"}  # fmt: skip
        assert max(roles["assistant::add"]) < 0.5
        assert Validator().violations(store.graph_triples(AUDIT_GRAPH)) == []
        rows = [{k: v.value for k, v in r.items()} for r in store.select(saved_query("toxic-flows").render())]
    best = rows[0]
    assert (best["server"], best["private"], best["joined"]) == ("assistant", "assistant::read_file", "true")
    assert {r["sink"] for r in rows} >= {sink}

    with ToolSearch(store_dir, trust=TrustPolicy.from_settings(["toxic-flow"])) as search:
        with pytest.raises(HiddenTool, match=f"toolkg approve {sink}"):
            search.get_tool(sink)
        assert search.get_tool("assistant::read_file")["id"] == "assistant::read_file"
    with ToolSearch(store_dir) as search:
        warnings = search.get_tool(sink)["warnings"]
        assert warnings[0]["kind"] == "toxic-flow" and warnings[0]["flow"][1]["tool"] == "assistant::read_file"


def test_without_a_sink_no_flow_and_a_sync_follows_the_catalog(tmp_path: Path) -> None:
    from toolkg.config import BuildConfig
    from toolkg.flows.sync import find_servers, sync_found_servers

    fetch = {**FETCH, "description": "Return the text of a page of the bundled manual."}  # neither untrusted nor sink
    fetch["parameters"] = [{"name": "page", "type": "string", "required": True, "description": "Page number."}]
    folder, store_dir = write_assistant(tmp_path / "catalog", [fetch, READ, ADD]), tmp_path / "store"
    build_in_process([folder], store_dir, links=False)
    with ToolStore(store_dir) as store:
        assert not any(f.kind == "toxic-flow" for fs in read_findings(store).values() for f in fs)
        # the sink and the fetcher arrive by a sync: the flow appears, as a rebuild finds it
        write_assistant(folder, [FETCH, READ, POST, ADD])
        sync_found_servers(
            store, ["assistant"], find_servers([str(folder)], ["assistant"]), config=BuildConfig(link=False)
        )
        synced = {t: [f.short() for f in fs] for t, fs in read_findings(store).items()}
    assert any(f["kind"] == "toxic-flow" for fs in synced.values() for f in fs)
    build_in_process([folder], store_dir, links=False)
    with ToolStore(store_dir) as store:
        assert {t: [f.short() for f in fs] for t, fs in read_findings(store).items()} == synced
        # and the sink leaves again by a sync: so does the flow
        write_assistant(folder, [FETCH, READ, ADD])
        sync_found_servers(
            store, ["assistant"], find_servers([str(folder)], ["assistant"]), config=BuildConfig(link=False)
        )
        kinds = [f.kind for fs in read_findings(store).values() for f in fs]
        flows = [f for fs in read_findings(store).values() for f in fs if f.kind == "toxic-flow"]
    # fetch_webpage is itself a sink (an arbitrary URL requested): the flow stays, on it, without post_message
    assert all("post_message" not in p.tool for f in flows for p in f.flow), kinds


def test_new_edges_alone_make_the_audit_due(tmp_path: Path) -> None:
    """The flows' severity reads the dependency edges, so an edge added without a manifest change (other inference
    options, an LLM review) changes the audit's digest: the next build audits again."""
    from types import SimpleNamespace

    from pyoxigraph import Triple

    from toolkg.flows.stages.audit import Audit
    from toolkg.ontology import TK, iris
    from toolkg.ontology.graphs import INFERRED_GRAPH

    plain = [{**t, "depends_on": []} for t in (FETCH, READ, POST, ADD)]
    folder, store_dir = write_assistant(tmp_path / "catalog", plain), tmp_path / "store"
    build_in_process([folder], store_dir, links=False, infer=False)
    with ToolStore(store_dir) as store:
        run = SimpleNamespace(store=store)
        before = Audit().extra_options(run)  # type: ignore[arg-type]
        post, read = iris.tool_iri_from_id("assistant::post_message"), iris.tool_iri_from_id("assistant::read_file")
        node = iris.dependency_iri(post, "toolDirectlyDependsOn", read, None)
        store.add_to_graph(INFERRED_GRAPH, [Triple(post, TK.qualifiedDependency, node), Triple(node, TK.onTool, read)])
        after = Audit().extra_options(run)  # type: ignore[arg-type]
    assert before["approvals"] == after["approvals"] and before["edges"] != after["edges"]
