"""Every manifest format, parsed from small real-shaped fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import CASES
from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.reading import discover, fingerprint_file


def ingest(path: Path, **options):
    file, data = fingerprint_file(path)
    result = ingest_manifest(file, data, **options)
    assert result.manifest is not None, result.quarantined
    return result.manifest, result.quarantined


def tools_by_name(manifest):
    return {t.name: t for s in manifest.servers for t in s.tools}


def test_mcp_tools_list_with_wrapper_names_the_server():
    manifest, quarantined = ingest(CASES / "mcp_bing.json")
    assert manifest.format == "mcp" and not quarantined
    (server,) = manifest.servers
    assert server.id == "bing-cn-mcp" and server.version == "0.1.0"
    search = tools_by_name(manifest)["bing_search"]
    assert search.id == "bing-cn-mcp::bing_search"
    params = {p.name: p for p in search.parameters}
    assert params["query"].required and params["query"].json_type == "string"
    assert not params["num_results"].required and params["num_results"].default == "5"
    assert params["num_results"].json_type == "number"


def test_mcp_jsonrpc_result_uses_file_stem_and_keeps_output_schema():
    manifest, _ = ingest(CASES / "mcp_jsonrpc_result.json")
    assert manifest.servers[0].id == "mcp_jsonrpc_result"
    tool = manifest.servers[0].tools[0]
    assert [(o.name, o.json_type) for o in tool.outputs] == [("result", "string")]


def test_server_override():
    manifest, _ = ingest(CASES / "mcp_bing.json", server="bing")
    assert manifest.servers[0].id == "bing" and manifest.servers[0].tools[0].id == "bing::bing_search"


def test_mcp_catalog_one_server_per_key_with_description_and_category():
    manifest, quarantined = ingest(CASES / "mcp_catalog.json")
    assert manifest.format == "mcp-catalog" and not quarantined
    assert [s.id for s in manifest.servers] == ["yahoo-finance", "npm-sentinel-mcp", "hugeicons"]
    assert [len(s.tools) for s in manifest.servers] == [10, 19, 3]
    yahoo = manifest.servers[0]
    assert yahoo.category and yahoo.description and yahoo.homepage
    annotated = [t for s in manifest.servers for t in s.tools if t.annotations]
    assert annotated and annotated[0].annotations.read_only is True


def test_openai_wrapped_and_bare():
    manifest, _ = ingest(CASES / "openai_tools.json")
    assert manifest.format == "openai" and manifest.servers[0].id == "openai_tools"
    weather = tools_by_name(manifest)["get_weather"]
    unit = {p.name: p for p in weather.parameters}["unit"]
    assert unit.enum == ('"celsius"', '"fahrenheit"') and unit.default == '"celsius"' and not unit.required
    days = {p.name: p for p in tools_by_name(manifest)["get_forecast"].parameters}["days"]
    assert days.json_type == "integer"  # ["integer", "null"] -> nullable integer
    bare, _ = ingest(CASES / "openai_bare.json")
    assert bare.format == "openai"
    assert [p.name for p in tools_by_name(bare)["send_email"].parameters] == ["to", "body"]
    assert tools_by_name(bare)["list_inbox"].parameters == ()


def test_openai_tools_under_a_tools_key_are_openai_not_mcp(tmp_path):
    """A chat request's body (or a wrapper naming the server) keeps OpenAI tools under "tools": they must not
    be read as an MCP tools/list, whose entries have no "function" object (every tool would be quarantined)."""
    tools = json.loads((CASES / "openai_tools.json").read_text())
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"model": "m", "server": "weather", "tools": tools}))
    manifest, quarantined = ingest(path)
    assert manifest.format == "openai" and not quarantined
    assert manifest.servers[0].id == "weather" and set(tools_by_name(manifest)) == {"get_weather", "get_forecast"}
    # an MCP listing beside it still reads as MCP
    mcp = tmp_path / "listing.json"
    mcp.write_text(json.dumps({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}))
    assert ingest(mcp)[0].format == "mcp"


def test_openapi_30_yaml_operations_parameters_body_and_output():
    manifest, quarantined = ingest(CASES / "petstore.yaml")
    assert manifest.format == "openapi" and not quarantined
    (server,) = manifest.servers
    assert server.id == "Swagger-Petstore" and server.category == "pets" and server.version == "1.0.0"
    tools = tools_by_name(manifest)
    assert set(tools) == {"listPets", "createPet", "get_pets_petId", "deletePet"}
    list_params = {p.name: p for p in tools["listPets"].parameters}
    assert list_params["limit"].location == "query" and list_params["limit"].default == "20"
    assert list_params["X-Trace-Id"].location == "header"  # resolved from components/parameters
    assert {o.name for o in tools["listPets"].outputs} == {"id", "name", "tag"}  # array of $ref Pet
    create = {p.name: p for p in tools["createPet"].parameters}
    assert create["name"].required and create["name"].location == "body" and not create["tag"].required
    assert create["tag"].enum == ('"dog"', '"cat"', '"bird"')
    path_param = tools["get_pets_petId"].parameters[0]
    assert (path_param.name, path_param.location, path_param.required) == ("petId", "path", True)
    assert tools["deletePet"].outputs == ()


def test_openapi_31_json_type_lists_and_2xx_range():
    manifest, _ = ingest(CASES / "notes_openapi31.json")
    tool = manifest.servers[0].tools[0]
    assert tool.name == "updateNote" and tool.description == "Replace a note's text."
    params = {p.name: p for p in tool.parameters}
    assert params["pinned"].json_type == "boolean" and params["text"].required
    assert {o.name for o in tool.outputs} == {"id", "updated_at"}


def test_toollinkos_keeps_dependencies_and_normalises_types():
    manifest, _ = ingest(CASES / "toollinkos" / "regular.json")
    assert manifest.format == "toollinkos"
    tool = manifest.servers[0].tools[0]
    assert tool.function_type == "regular"
    assert {p.name: p.json_type for p in tool.parameters} == {"location": "string", "radius_km": "number"}
    kinds = {(d.target, d.kind, d.parameter) for d in tool.depends_on}
    assert kinds == {
        ("get_current_location", "parameterDirectlyDependsOn", "location"),
        ("check_internet_connection", "toolIndirectlyDependsOn", None),
    }


def test_forced_format_overrides_detection(tmp_path):
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([{"name": "ping", "description": "d", "inputSchema": {"type": "object"}}]))
    manifest, _ = ingest(path, format="mcp")
    assert manifest.format == "mcp" and manifest.servers[0].tools[0].name == "ping"


def test_discover_walks_folders_and_skips_hidden_and_other_files(tmp_path):
    (tmp_path / "a.json").write_text("[]")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.yaml").write_text("x: 1")
    (tmp_path / "sub" / "notes.txt").write_text("no")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "c.json").write_text("[]")
    assert [p.name for p in discover([tmp_path])] == ["a.json", "b.yaml"]


def test_manifest_hash_is_sha256_of_the_bytes():
    import hashlib

    file, data = fingerprint_file(CASES / "petstore.yaml")
    assert file.sha256 == hashlib.sha256(data).hexdigest() and file.size == len(data)


@pytest.mark.parametrize("name", ["get_stock_price", "a b"])
def test_tool_ids_are_server_double_colon_tool(name, tmp_path):
    path = tmp_path / "srv.json"
    path.write_text(json.dumps({"tools": [{"name": name, "inputSchema": {"type": "object"}}]}))
    manifest, _ = ingest(path)
    assert manifest.servers[0].tools[0].id == f"srv::{name}"


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["tools", "type", "function", "name", "parameters", "result", "openapi", "x"]),
            children,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@given(document=_json)
def test_format_detection_names_a_format_or_says_why_not(document):
    """Whatever the JSON, detection names one of the formats or raises a ManifestError: never a crash."""
    from toolkg.errors import ManifestError
    from toolkg.extractors.manifests.formats import detect_format

    try:
        assert detect_format(document, "x.json") in ("openapi", "arazzo", "mcp", "openai", "mcp-catalog", "toollinkos")
    except ManifestError as exc:
        assert str(exc)
