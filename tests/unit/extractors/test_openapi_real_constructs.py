"""Constructs of public OpenAPI descriptions that other OpenAPI tools read and toolkg once refused or misread.

Measured on public descriptions as their authors publish them (the specification's examples, Docker Engine,
Slack, Netlify, Box, Discord, PagerDuty, OpenAI, Twilio, DigitalOcean): Swagger 2.0 documents were refused
whole, ``allOf`` bodies and outputs read as one untyped ``body`` (or nothing), an object body with no listed
fields lost its only parameter, and an operation kept in another file (``get: {$ref: ...}``) became a tool
with no description and no notice. Each case here is a small inline description of that construct.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.conftest import CASES
from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.laxities import MAX_ALL_OF_PARTS
from toolkg.extractors.manifests.openapi import parse_openapi
from toolkg.extractors.manifests.reading import fingerprint_file


def parsed(document: dict[str, Any]) -> tuple[dict[str, Any], list[Any], dict[str, list[str]]]:
    result = parse_openapi("spec.json", document, None)
    tools = {t.name: t for s in result.servers for t in s.tools}
    notices: dict[str, list[str]] = {}
    for notice in result.notices:
        notices.setdefault(notice.item.split("::", 1)[1], []).append(notice.what)
    return tools, result.quarantined, notices


def parameters(tool) -> dict[str, tuple[str, bool, str]]:
    return {p.name: (p.json_type, p.required, p.location) for p in tool.parameters}


def outputs(tool) -> list[str]:
    return [o.name for o in tool.outputs]


SWAGGER2 = {
    "swagger": "2.0",
    "info": {"title": "Files", "version": "1"},
    "basePath": "/v1",
    "parameters": {"Limit": {"name": "limit", "in": "query", "type": "integer"}},
    "responses": {"Listing": {"description": "ok", "schema": {"$ref": "#/definitions/Listing"}}},
    "definitions": {
        "File": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
        "Listing": {"type": "array", "items": {"$ref": "#/definitions/File"}},
    },
    "paths": {
        "/folders/{folder}": {
            "parameters": [{"name": "folder", "in": "path", "required": True, "type": "string"}],
            "get": {
                "operationId": "listFiles",
                "parameters": [{"$ref": "#/parameters/Limit"}],
                "responses": {"200": {"$ref": "#/responses/Listing"}},
            },
            "put": {
                "operationId": "createFile",
                "parameters": [
                    {"name": "file", "in": "body", "required": True, "schema": {"$ref": "#/definitions/File"}}
                ],
                "responses": {"201": {"description": "made", "schema": {"$ref": "#/definitions/File"}}},
            },
            "post": {
                "summary": "Upload a file",
                "consumes": ["multipart/form-data"],
                "parameters": [
                    {"name": "upload", "in": "formData", "type": "file", "required": True},
                    {"name": "note", "in": "formData", "type": "string"},
                    {"name": "tags[]", "in": "query", "type": "array", "items": {"type": "string"}},
                ],
                "responses": {"200": {"description": "the file", "schema": {"type": "file"}}},
            },
        }
    },
}


def test_a_swagger_2_document_is_read_whole_without_notices():
    tools, quarantined, notices = parsed(SWAGGER2)
    assert not quarantined and not notices  # Swagger 2's own ways are no laxity in a Swagger 2 document
    assert parameters(tools["listFiles"]) == {"folder": ("string", True, "path"), "limit": ("integer", False, "query")}
    assert outputs(tools["listFiles"]) == ["name"]  # a response $ref to #/responses, its schema's array items
    assert parameters(tools["createFile"]) == {"folder": ("string", True, "path"), "name": ("string", True, "body")}
    upload = tools["post_folders_folder"]  # no operationId: named after its method and route
    assert upload.route == "POST /folders/{folder}"
    assert parameters(upload) == {
        "folder": ("string", True, "path"),
        "upload": ("string", True, "body"),  # type: file, a binary string as the OpenAPI 3 converters read it
        "note": ("string", False, "body"),
        "tags[]": ("array", False, "query"),
    }
    assert [(o.name, o.json_type) for o in upload.outputs] == [("result", "string")]


def test_swagger_2_written_in_yaml_with_a_number_for_its_version(tmp_path: Path):
    path = tmp_path / "files.yaml"
    path.write_text(yaml.safe_dump(SWAGGER2).replace("swagger: '2.0'", "swagger: 2.0"), encoding="utf-8")
    assert "swagger: 2.0\n" in path.read_text(encoding="utf-8")
    file, data = fingerprint_file(path)
    result = ingest_manifest(file, data)
    assert result.manifest is not None and result.manifest.format == "openapi"
    assert len(result.manifest.servers[0].tools) == 3


def test_the_specifications_own_swagger_2_example_loads_whole():
    file, data = fingerprint_file(CASES / "real" / "openapi" / "swagger2-petstore-expanded.yaml")
    result = ingest_manifest(file, data)
    assert not result.quarantined and not result.notices
    tools = {t.name: t for t in result.parsed.servers[0].tools}
    assert sorted(tools) == ["addPet", "deletePet", "find pet by id", "findPets"]
    assert parameters(tools["addPet"]) == {"name": ("string", True, "body"), "tag": ("string", False, "body")}
    assert outputs(tools["find pet by id"]) == ["name", "tag", "id"]  # Pet is allOf NewPet and {id}


def _openapi(paths: dict[str, Any], schemas: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "T", "version": "1"},
        "paths": paths,
        "components": {"schemas": schemas or {}},
    }


def _post(body: Any, response: Any = None) -> dict[str, Any]:
    operation: dict[str, Any] = {"requestBody": {"required": True, "content": {"application/json": {"schema": body}}}}
    if response is not None:
        operation["responses"] = {"200": {"description": "ok", "content": {"application/json": {"schema": response}}}}
    return operation


def test_all_of_bodies_and_outputs_are_merged():
    schemas = {
        "Named": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
        "Dated": {
            "allOf": [
                {"$ref": "#/components/schemas/Named"},
                {"properties": {"date": {"type": "string"}}, "required": ["date"]},
            ]
        },
    }
    body = {
        "allOf": [
            {"$ref": "#/components/schemas/Dated"},
            {"type": "object", "properties": {"size": {"type": "integer"}}},
        ]
    }
    tools, quarantined, notices = parsed(_openapi({"/things": {"post": _post(body, body)}}, schemas))
    assert not quarantined and not notices
    made = tools["post_things"]
    assert parameters(made) == {
        "size": ("integer", False, "body"),
        "name": ("string", True, "body"),
        "date": ("string", True, "body"),
    }
    assert sorted(outputs(made)) == ["date", "name", "size"]


def test_an_all_of_that_loops_or_fans_out_is_bounded_and_noted():
    fan = {
        f"P{i}": {"allOf": [{"$ref": f"#/components/schemas/P{i + 1}"}] * 4, "properties": {f"f{i}": {}}}
        for i in range(12)
    }
    fan["Loop"] = {"allOf": [{"$ref": "#/components/schemas/Loop"}], "properties": {"x": {"type": "string"}}}
    paths = {
        "/fan": {"post": _post({"$ref": "#/components/schemas/P0"})},
        "/loop": {"post": _post({"$ref": "#/components/schemas/Loop"})},
    }
    tools, quarantined, notices = parsed(_openapi(paths, fan))
    assert not quarantined
    assert parameters(tools["post_loop"]) == {"x": ("string", False, "body")}
    assert len(tools["post_fan"].parameters) <= MAX_ALL_OF_PARTS
    for name in ("post_fan", "post_loop"):
        assert any("allOf nested deeper than 8 levels or past 256 parts" in n for n in notices[name]), notices


def test_an_object_body_with_no_listed_fields_is_one_body_parameter():
    one_of = {"type": "object", "oneOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}]}
    paths = {
        "/map": {"put": _post({"type": "object", "additionalProperties": {"type": "string"}})},
        "/either": {"put": _post(one_of)},
        "/empty": {"put": _post({"type": "object", "properties": {}})},
    }
    tools, quarantined, _ = parsed(_openapi(paths))
    assert not quarantined
    assert parameters(tools["put_map"]) == {"body": ("object", True, "body")}
    assert parameters(tools["put_either"]) == {"body": ("object", True, "body")}
    assert parameters(tools["put_empty"]) == {}  # an object stated to have no fields has none


def test_an_operation_kept_in_another_file_keeps_its_tool_with_a_notice():
    paths = {
        "/v2/account": {"get": {"$ref": "resources/account/account_get.yml"}},
        "/v2/local": {"get": {"$ref": "#/x-operations/local"}},
        "/v2/odd": {"get": {"$ref": "#/tags", "summary": "kept"}},
    }
    document = {
        **_openapi(paths),
        "tags": [],
        "x-operations": {"local": {"operationId": "getLocal", "summary": "Here"}},
    }
    tools, quarantined, notices = parsed(document)
    assert not quarantined
    assert sorted(tools) == ["getLocal", "get_v2_account", "get_v2_odd"]
    assert tools["getLocal"].description == "Here" and "getLocal" not in notices
    assert notices["get_v2_account"] == [
        "operation: $ref 'resources/account/account_get.yml' points into another document, which is not read: "
        "read from its route alone"
    ]
    assert tools["get_v2_odd"].description == "kept"
    assert notices["get_v2_odd"] == ["operation: $ref '#/tags' is a list, not an object: read from its route alone"]


def test_names_real_descriptions_use_are_kept_and_unsafe_ones_still_refused():
    query = [
        {"name": n, "in": "query", "schema": {"type": "string"}}
        for n in ("filter[name]", "page.size", "ids[]", "$select", "città")
    ]
    paths = {
        "/items": {"get": {"operationId": "list items (v2)", "parameters": query}},
        "/bad": {"get": {"operationId": "bad", "parameters": [{"name": "a\nb", "in": "query"}]}},
    }
    document = {**_openapi(paths), "openapi": 3.0}  # YAML reads openapi: 3.0 as a number
    tools, quarantined, _ = parsed(document)
    assert [p.name for p in tools["list items (v2)"].parameters] == [
        "filter[name]",
        "page.size",
        "ids[]",
        "$select",
        "città",
    ]
    (entry,) = quarantined
    assert entry.item == "T::bad" and "parameter name contains a control character (U+000A)" in entry.reason
    assert "\n" not in entry.reason
