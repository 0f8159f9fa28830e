"""Bad input: a clear one-line reason, a quarantine entry, and the rest still loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CASES
from toolkg.extractors.ingest import ingest_manifest
from toolkg.extractors.reading import fingerprint_file


def ingest_bytes(tmp_path: Path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    file, raw = fingerprint_file(path)
    return ingest_manifest(file, raw)


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        (
            "broken.json",
            b'{"tools": [ {"name": "x",, } ]}',
            "invalid JSON at line 1, column 26: Expecting property name",
        ),
        ("empty.json", b"", "file is empty"),
        ("blank.json", b"  \n ", "file is empty"),
        ("latin1.json", '{"tools": [{"name": "café"}]}'.encode("latin-1"), "not valid UTF-8 text (bad byte 0xe9"),
        ("scalar.json", b"42", "manifest must be a JSON object or list"),
        ("unknown.json", b'{"hello": "world"}', "unrecognised manifest"),
        ("broken.yaml", b"openapi: 3.0.0\ninfo: [unclosed\n", "invalid YAML"),
        ("swagger.json", b'{"swagger": "2.0"}', "Swagger 2.0 is not supported"),
    ],
)
def test_unreadable_manifest_is_quarantined_whole(tmp_path, name, data, reason):
    result = ingest_bytes(tmp_path, name, data)
    assert result.manifest is None
    (entry,) = result.quarantined
    assert reason in entry.reason and "\n" not in entry.reason
    assert entry.stage == "parse" and entry.source.endswith(name)


def test_utf16_with_bom_is_decoded(tmp_path):
    text = json.dumps({"tools": [{"name": "ping", "description": "répond", "inputSchema": {"type": "object"}}]})
    result = ingest_bytes(tmp_path, "utf16.json", text.encode("utf-16"))
    assert result.manifest.servers[0].tools[0].description == "répond"


def test_bad_tools_are_quarantined_and_good_ones_kept(tmp_path):
    tools = [
        {"name": "good", "description": "fine", "inputSchema": {"type": "object"}},
        {"description": "no name"},
        {"name": "good", "description": "duplicate"},
        {"name": "typed", "description": 5},
        {"name": "params", "inputSchema": {"type": "object", "properties": "oops"}},
        {"name": "req", "inputSchema": {"type": "object", "properties": {}, "required": "all"}},
        "not an object",
        {"name": "also_good", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}},
    ]
    result = ingest_bytes(tmp_path, "mixed.json", json.dumps({"server_name": "mix", "tools": tools}).encode())
    assert [t.name for t in result.manifest.servers[0].tools] == ["good", "also_good"]
    reasons = {q.item: q.reason for q in result.quarantined}
    assert reasons == {
        "mix::#1": "tool name must be a string, got NoneType",
        "mix::good": "duplicate tool name 'good' (first defined at index 0)",
        "mix::typed": "description must be a string, got int",
        "mix::params": "input schema properties must be an object, got str",
        "mix::req": "input schema 'required' must be a list of property names",
        "mix::#6": "tool #6 must be an object, got str",
    }
    assert all(q.raw for q in result.quarantined)  # the offending input is kept for the fix


def test_toollinkos_wrong_types(tmp_path):
    tools = [
        {"name": "a", "parameters": [{"name": "x", "type": "string", "required": "yes"}], "depends_on": []},
        {"name": "b", "parameters": [], "depends_on": [{"name": "a", "dependence_type": "SOMETIMES"}]},
        {"name": "c", "parameters": {}, "depends_on": []},
        {"name": "d", "parameters": [], "depends_on": []},
    ]
    result = ingest_bytes(tmp_path, "tl.json", json.dumps(tools).encode())
    assert [t.name for t in result.manifest.servers[0].tools] == ["d"]
    reasons = [q.reason for q in result.quarantined]
    assert reasons[0] == "parameter 'x': required must be true or false, got 'yes'"
    assert reasons[1].startswith("unknown dependence_type 'SOMETIMES'")
    assert reasons[2] == "parameters must be a list, got dict"


def test_openapi_bad_ref_quarantines_the_operation(tmp_path):
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "T", "version": "1"},
        "paths": {
            "/a": {"get": {"operationId": "a", "parameters": [{"$ref": "#/components/parameters/Nope"}]}},
            "/b": {"get": {"operationId": "b"}},
        },
    }
    result = ingest_bytes(tmp_path, "api.json", json.dumps(doc).encode())
    assert [t.name for t in result.manifest.servers[0].tools] == ["b"]
    assert "points nowhere" in result.quarantined[0].reason


def test_catalog_entry_without_tools_is_quarantined(tmp_path):
    catalog = json.loads((CASES / "mcp_catalog.json").read_text())
    catalog.append({"name": "broken", "tools": 3})
    result = ingest_bytes(tmp_path, "cat.json", json.dumps(catalog).encode())
    assert len(result.manifest.servers) == 3
    assert result.quarantined[0].item == "broken" and "tools must be an object" in result.quarantined[0].reason
