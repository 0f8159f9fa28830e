"""Bad input: a clear one-line reason, a quarantine entry, and the rest still loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CASES
from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.reading import fingerprint_file


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
        ("swagger.json", b'{"swagger": "1.2", "paths": {}}', "unsupported Swagger version '1.2' (2.0 is supported)"),
        ("openapi4.json", b'{"openapi": "4.0.0", "paths": {}}', "unsupported OpenAPI version '4.0.0'"),
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


def test_openapi_bad_ref_costs_only_the_parameter(tmp_path):
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "T", "version": "1"},
        "paths": {
            "/a": {"get": {"operationId": "a", "parameters": [{"$ref": "#/components/parameters/Nope"}]}},
            "/b": {"get": {"operationId": "b"}},
        },
    }
    result = ingest_bytes(tmp_path, "api.json", json.dumps(doc).encode())
    assert [t.name for t in result.manifest.servers[0].tools] == ["a", "b"] and not result.quarantined
    assert [n.what for n in result.notices] == [
        "parameter #1: $ref '#/components/parameters/Nope' points nowhere: parameter dropped"
    ]


def test_catalog_entry_without_tools_is_quarantined(tmp_path):
    catalog = json.loads((CASES / "mcp_catalog.json").read_text())
    catalog.append({"name": "broken", "tools": 3})
    result = ingest_bytes(tmp_path, "cat.json", json.dumps(catalog).encode())
    assert len(result.manifest.servers) == 3
    assert result.quarantined[0].item == "broken" and "tools must be an object" in result.quarantined[0].reason


# --- limits and hostile input (toolkg.limits, extractors/manifests/reading.py and fitting.py) ----------


def _bomb(levels: int = 9) -> bytes:
    text = 'a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
    for level in range(1, levels):
        text += f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]\n"
    return (
        text + f"tools:\n  - name: boom\n    inputSchema: {{properties: {{p: {{default: *a{levels - 1}}}}}}}\n"
    ).encode()


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("bomb.yaml", _bomb(), "YAML aliases expand to"),
        ("cycle.yaml", b"tools:\n  - &t\n    name: x\n    inputSchema: {properties: {p: {default: *t}}}\n", "a cycle"),
        ("bigint.json", b'{"tools": [{"name": "n", "x": ' + b"9" * 5000 + b"}]}", "more than 4300 digits"),
        ("bigint.yaml", b"tools:\n  - name: n\n    x: " + b"9" * 5000 + b"\n", "more than 4300 digits"),
        ("deep.json", b"[" * 40_000 + b"]" * 40_000, "nested more than about 10,000 levels"),
        ("tools_x.json", b'{"tools": "x"}', "unrecognised manifest"),
    ],
)
def test_hostile_files_are_refused_whole_with_a_reason(tmp_path, name, data, reason):
    result = ingest_bytes(tmp_path, name, data)
    assert result.manifest is None
    (entry,) = result.quarantined
    assert reason in entry.reason and "\n" not in entry.reason and len(entry.raw) <= 2000


def test_alias_use_within_the_limit_is_fine(tmp_path):
    text = b"common: &p {type: string}\ntools:\n" + b"".join(
        b"  - name: t%d\n    inputSchema: {type: object, properties: {q: *p}}\n" % i for i in range(50)
    )
    result = ingest_bytes(tmp_path, "aliases.yaml", text)
    assert len(result.manifest.servers[0].tools) == 50 and not result.quarantined


def test_one_deep_tool_is_quarantined_alone(tmp_path):
    deep = '{"type": "object", "properties": {"x": ' * 900 + '{"type": "string"}' + "}}" * 900
    text = '{"tools": [{"name": "deep", "inputSchema": {"type": "object", "properties": {"p": ' + deep + "}}}"
    text += ', {"name": "fine", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}]}'
    result = ingest_bytes(tmp_path, "deep_tool.json", text.encode())
    assert [t.name for t in result.manifest.servers[0].tools] == ["fine"]
    (entry,) = result.quarantined
    assert entry.item.endswith("::deep") and "nested more than 64 levels deep" in entry.reason


def test_values_json_cannot_hold_and_yaml_dates(tmp_path):
    text = b'{"tools": [{"name": "nan", "inputSchema": {"properties": {"p": {"default": NaN}}}}, {"name": "ok"}]}'
    result = ingest_bytes(tmp_path, "nan.json", text)
    assert [t.name for t in result.manifest.servers[0].tools] == ["ok"]
    assert "NaN and Infinity are not JSON values" in result.quarantined[0].reason
    yaml_text = b"tools:\n  - name: since\n    inputSchema: {properties: {d: {type: string, default: 2024-01-02}}}\n"
    (tool,) = ingest_bytes(tmp_path, "date.yaml", yaml_text).manifest.servers[0].tools
    assert tool.parameters[0].default == '"2024-01-02"'


def test_lone_surrogates_become_replacement_characters(tmp_path):
    text = b'{"server_name": "s", "tools": [{"name": "a\\ud800b", "description": "x \\udc00 \\ud83d\\ude00"}]}'
    (tool,) = ingest_bytes(tmp_path, "surrogate.json", text).manifest.servers[0].tools
    assert tool.name == "a\ufffdb" and tool.description == "x \ufffd \U0001f600"
    yaml_text = b'tools:\n  - name: "y\\ud800"\n'
    (tool,) = ingest_bytes(tmp_path, "surrogate.yaml", yaml_text).manifest.servers[0].tools
    assert tool.name == "y\ufffd"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("get\tweather", "tool name contains a control character (U+0009)"),
        ("fake\nquarantined: none", "tool name contains a control character (U+000A)"),
        ("evil\x1b[2J", "tool name contains a control character (U+001B)"),
        ("n" * 600, "tool name is 600 characters, over the 512 limit"),
        ("   ", "tool name is empty"),
    ],
)
def test_unusable_tool_names_are_quarantined(tmp_path, name, reason):
    doc = {"server_name": "s", "tools": [{"name": name}, {"name": "two  spaces"}, {"name": "get_2024"}]}
    result = ingest_bytes(tmp_path, "names.json", json.dumps(doc).encode())
    assert [t.name for t in result.manifest.servers[0].tools] == ["two  spaces", "get_2024"]
    (entry,) = result.quarantined
    assert reason in entry.reason


def test_long_values_are_trimmed_with_a_notice(tmp_path):
    from toolkg.extractors.manifests.ingest import ingest_manifest
    from toolkg.limits import Limits

    doc = {
        "tools": [
            {
                "name": "t",
                "description": "d" * 5000,
                "inputSchema": {"properties": {"p": {"type": "string", "enum": [str(i) for i in range(40)]}}},
            }
        ]
    }
    path = tmp_path / "long.json"
    path.write_text(json.dumps(doc))
    file, raw = fingerprint_file(path)
    result = ingest_manifest(file, raw, limits=Limits(max_description_chars=100, max_enum_values=10))
    (tool,) = result.parsed.servers[0].tools
    assert len(tool.description) == 100 and len(tool.parameters[0].enum) == 10
    assert [n.what for n in result.notices] == [
        "description trimmed from 5,000 to 100 characters",
        "parameter 'p': kept 10 of 40 enum values",
    ]


def test_a_file_over_the_size_limit_is_not_read(tmp_path):
    from toolkg.errors import ManifestError
    from toolkg.limits import Limits

    path = tmp_path / "big.json"
    with path.open("wb") as out:  # sparse: 2 MB on paper, nothing on disk
        out.truncate(2 * 1024 * 1024)
    with pytest.raises(ManifestError, match=r"file is 2 MB, over the 1 MB limit \(--limit max_file_mb=N\)"):
        fingerprint_file(path, Limits(max_file_mb=1))


def test_symlinks_out_of_the_folder_are_not_followed(tmp_path):
    from toolkg.extractors.manifests.reading import discover_all

    outside = tmp_path / "secret.json"
    outside.write_text('{"tools": []}')
    folder = tmp_path / "catalog"
    folder.mkdir()
    (folder / "real.json").write_text('{"tools": []}')
    (folder / "inside.json").symlink_to(folder / "real.json")
    (folder / "leak.json").symlink_to(outside)
    (folder / "loop").symlink_to(folder)  # a folder link back into itself is not walked
    found = discover_all([folder])
    assert [p.name for p in found.files] == ["real.json"]
    assert [(p.split("/")[-1], "outside" in why) for p, why in found.skipped] == [("leak.json", True)]
