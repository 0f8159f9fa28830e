"""Real public catalogs (tests/cases/real, see SOURCES.md there) build cleanly with the real CLI.

Each catalog is built in a subprocess into a fresh store: exit code 0 (nothing quarantined), no traceback, and
the store's counts (`toolkg stats --json`) equal what this file counts in the input files itself, following
the README's formats (a tool per MCP tool / OpenAI function / OpenAPI operation; a parameter per top-level
input property, per OpenAPI path/query/header/cookie parameter and per JSON request-body property). Then a
query or two checks that the graph says what the files say.

The GitHub description (1223 operations) is built with `--no-links`: embedding 1223 descriptions for the
structural links alone takes about 3.5 minutes on this 2-core machine, past this file's budget; the MCP and
BFCL builds run the whole pipeline, links included.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolkg.extractors.manifests.schema import MAX_OUTPUT_FIELDS

REAL = Path(__file__).resolve().parents[1] / "cases" / "real"
MCP_DIR = REAL / "mcp-servers"
OPENAI_DIR = REAL / "openai" / "bfcl-multi-turn"
GITHUB = REAL / "openapi" / "api.github.com.json"

HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


# --- counting the input files ---------------------------------------------------------------------


def _properties(schema: Any) -> dict[str, Any]:
    if not isinstance(schema, dict):
        return {}
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) else {}


def _mcp_expected() -> dict[str, Any]:
    """Per server id: tools, parameters (top-level inputSchema properties), outputSchema properties."""
    servers: dict[str, dict[str, int]] = {}
    read_only: set[str] = set()
    for path in sorted(MCP_DIR.glob("*.json")):
        document = json.loads(path.read_text())
        server = document["server_name"]
        assert server == path.stem, path
        tools = document["tools"]
        assert tools, path
        servers[server] = {
            "tools": len(tools),
            "parameters": sum(len(_properties(tool.get("inputSchema"))) for tool in tools),
            "outputs": sum(len(_properties(tool.get("outputSchema"))) for tool in tools),
        }
        read_only |= {
            f"{server}::{tool['name']}" for tool in tools if (tool.get("annotations") or {}).get("readOnlyHint") is True
        }
    return {"servers": servers, "read_only": read_only}


def _openai_expected() -> dict[str, dict[str, int]]:
    """Per file (server id = file name): functions and their top-level parameters."""
    servers = {}
    for path in sorted(OPENAI_DIR.glob("*.json")):
        functions = json.loads(path.read_text())
        assert isinstance(functions, list) and functions, path
        functions = [entry.get("function", entry) for entry in functions]
        servers[path.stem] = {
            "tools": len(functions),
            "parameters": sum(len(_properties(function.get("parameters"))) for function in functions),
        }
    return servers


def _github_expected() -> dict[str, Any]:
    """Operations and their parameters, as the README's openapi row and extractors/manifests/openapi.py say."""
    document = json.loads(GITHUB.read_text())

    def resolve(node: Any) -> Any:
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            target: Any = document
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            node = target
        return node

    def json_schema(content: Any) -> Any:
        if not isinstance(content, dict) or not content:
            return None
        for media_type, entry in content.items():
            if "json" in media_type:
                return entry.get("schema")
        return next(iter(content.values())).get("schema")

    tools: list[str] = []
    parameters = 0
    outputs_at_most = 0
    for route, item in document["paths"].items():
        for method in HTTP_METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            tools.append(operation.get("operationId") or f"{method} {route}")
            declared = [resolve(p) for p in item.get("parameters", []) + operation.get("parameters", [])]
            parameters += len({(p["name"], p["in"]) for p in declared})
            body = resolve(operation.get("requestBody"))
            schema = resolve(json_schema(body.get("content"))) if isinstance(body, dict) else None
            if isinstance(schema, dict):
                # an object that lists its fields gives one parameter a field; any other body (one of several
                # shapes, a map) is one parameter
                parameters += len(_properties(schema)) if "properties" in schema else 1
            for code in sorted(str(code) for code in operation.get("responses", {}) if str(code).startswith("2")):
                schema = resolve(json_schema(resolve(operation["responses"][code]).get("content")))
                if isinstance(schema, dict):
                    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
                        schema = resolve(schema["items"])
                    outputs_at_most += len(_properties(schema)) or 1
                    break
    return {"title": document["info"]["title"], "tools": tools, "parameters": parameters, "outputs": outputs_at_most}


# --- running the CLI --------------------------------------------------------------------------------


def _build(cli, path: Path, store_dir: Path, *options: str) -> str:
    result = cli("build", str(path), "--store", str(store_dir), *options)
    assert "Traceback" not in result.stderr, result.stderr[-4000:]
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert "quarantined: none" in result.stdout, result.stdout[-3000:]
    return result.stdout


def _stats(cli, store_dir: Path) -> dict[str, Any]:
    result = cli("stats", "--store", str(store_dir), "--json")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    stats = json.loads(result.stdout)
    stats["by_server"] = {row["server"]: row for row in stats["servers"]}
    return stats


def _select(cli, store_dir: Path, sparql: str) -> list[dict[str, str]]:
    result = cli("query", "--store", str(store_dir), "--format", "json", sparql)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    bindings = json.loads(result.stdout)["results"]["bindings"]
    return [{name: cell["value"] for name, cell in row.items()} for row in bindings]


TOOLS_PER_SERVER = """
SELECT ?server (COUNT(DISTINCT ?t) AS ?tools) WHERE { ?s a tk:Server ; tk:identifier ?server ; tk:hasTool ?t }
GROUP BY ?server
"""


# --- the catalogs ---------------------------------------------------------------------------------------


def test_real_mcp_servers_build(cli, store_dir):
    """All captured MCP servers' tools/list results in one build."""
    expected = _mcp_expected()
    servers = expected["servers"]
    assert len(servers) >= 15

    _build(cli, MCP_DIR, store_dir)

    stats = _stats(cli, store_dir)
    totals = stats["totals"]
    assert totals["servers"] == len(servers)
    assert totals["tools"] == sum(s["tools"] for s in servers.values())
    assert totals["parameters"] == sum(s["parameters"] for s in servers.values())
    assert totals["outputs"] >= sum(s["outputs"] for s in servers.values())
    assert set(stats["by_server"]) == set(servers)
    for server, counts in servers.items():
        row = stats["by_server"][server]
        assert (row["tools"], row["parameters"]) == (counts["tools"], counts["parameters"]), server

    per_server = {row["server"]: int(row["tools"]) for row in _select(cli, store_dir, TOOLS_PER_SERVER)}
    assert per_server == {server: counts["tools"] for server, counts in servers.items()}

    read_only = _select(cli, store_dir, "SELECT ?id WHERE { ?t a tk:Tool ; tk:identifier ?id ; tk:readOnlyHint true }")
    assert {row["id"] for row in read_only} == expected["read_only"]
    assert expected["read_only"]


def test_real_openai_functions_build(cli, store_dir):
    """BFCL's multi-turn function docs: one OpenAI-format file per API, twelve servers in one build."""
    servers = _openai_expected()
    assert len(servers) == 12

    _build(cli, OPENAI_DIR, store_dir)

    stats = _stats(cli, store_dir)
    totals = stats["totals"]
    assert totals["servers"] == len(servers)
    assert totals["tools"] == sum(s["tools"] for s in servers.values())
    assert totals["parameters"] == sum(s["parameters"] for s in servers.values())
    for server, counts in servers.items():
        row = stats["by_server"][server]
        assert (row["tools"], row["parameters"]) == (counts["tools"], counts["parameters"]), server

    per_server = {row["server"]: int(row["tools"]) for row in _select(cli, store_dir, TOOLS_PER_SERVER)}
    assert per_server == {server: counts["tools"] for server, counts in servers.items()}

    # Required flags come from each function's own `required` list (its schema says "type": "dict").
    ticket = {f["name"]: f for f in json.loads((OPENAI_DIR / "ticket_api.json").read_text())}["create_ticket"]
    rows = _select(
        cli,
        store_dir,
        'SELECT ?name ?required WHERE { ?t tk:identifier "ticket_api::create_ticket" ; tk:hasParameter ?p .'
        " ?p tk:name ?name ; tk:required ?required }",
    )
    assert {row["name"]: row["required"] == "true" for row in rows} == {
        name: name in ticket["parameters"]["required"] for name in ticket["parameters"]["properties"]
    }


@pytest.mark.slow
def test_real_github_openapi_build(cli, store_dir):
    """GitHub's REST API description (@octokit/openapi, ~1200 operations) as one server."""
    expected = _github_expected()
    assert len(expected["tools"]) > 1000
    assert len(set(expected["tools"])) == len(expected["tools"])  # every operation has its own operationId

    _build(cli, GITHUB, store_dir, "--no-links")

    stats = _stats(cli, store_dir)
    totals = stats["totals"]
    assert totals["servers"] == 1
    assert totals["tools"] == len(expected["tools"])
    assert totals["parameters"] == expected["parameters"]
    # every top-level response field, and the nested fields below them (at most MAX_OUTPUT_FIELDS a tool)
    assert expected["outputs"] < totals["outputs"] <= expected["outputs"] + MAX_OUTPUT_FIELDS * len(expected["tools"])
    assert [row["tools"] for row in stats["servers"]] == [len(expected["tools"])]
    # a listing's items carry what it yields: the jobs of a workflow run, each with its id
    rows = _select(
        cli,
        store_dir,
        'SELECT ?name WHERE { ?t tk:name "actions/list-jobs-for-workflow-run" ; tk:hasOutput ?o . ?o tk:name ?name }',
    )
    assert {"total_count", "jobs", "jobs[].id", "jobs[].run_id"} <= {row["name"] for row in rows}

    rows = _select(
        cli,
        store_dir,
        'SELECT ?name ?location ?required WHERE { ?t tk:name "repos/get" ; tk:hasParameter ?p .'
        " ?p tk:name ?name ; tk:location ?location ; tk:required ?required }",
    )
    assert sorted((row["name"], row["location"], row["required"]) for row in rows) == [
        ("owner", "path", "true"),
        ("repo", "path", "true"),
    ]
    route = _select(cli, store_dir, 'SELECT ?r WHERE { ?t tk:name "repos/get" ; tk:httpRoute ?r }')
    assert [row["r"] for row in route] == ["GET /repos/{owner}/{repo}"]
    names = _select(cli, store_dir, "SELECT (COUNT(DISTINCT ?name) AS ?n) WHERE { ?t a tk:Tool ; tk:name ?name }")
    assert int(names[0]["n"]) == len(expected["tools"])


def test_the_data_flow_join_is_in_the_graph(cli, store_dir):
    """tau2's airline tools (their declared responses included): what each identifier parameter identifies and
    what each tool yields are triples, and the saved query joins them as an analyst would."""
    _build(cli, REAL / "openai" / "tau2" / "airline.json", store_dir, "--no-links")
    result = cli(
        "query", "--store", str(store_dir), "--saved", "data-flow-join", "-p", "server=airline", "--format", "json"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [{k: v["value"] for k, v in row.items()} for row in json.loads(result.stdout)["results"]["bindings"]]
    joined = {(r["consumer"], r["parameter"], r["entity"], r["producer"]): r["linked"] == "true" for r in rows}
    # a flight search yields flights (its declared results carry flight numbers); the status check takes one
    assert joined[("get_flight_status", "flight_number", "flight", "search_direct_flight")] is True
    # a reservation id is yielded by the tool that makes one, never by a tool that must be given it first
    assert ("get_reservation_details", "reservation_id", "reservation", "book_reservation") in joined
    assert not any(p == "cancel_reservation" and e == "reservation" for _, _, e, p in joined)
    assert all(c != p for c, _, _, p in joined)
