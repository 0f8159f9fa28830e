"""A tool as an agent needs to call it: a complete ``ToolRecord`` (``store/records.py``) as JSON -- its
server, description, annotations and an input JSON Schema rebuilt from its stored parameters (type,
description, enum, default, required), plus its outputs. What ``toolkg mcp``'s ``get_tool`` /
``search_tools`` return."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pyoxigraph import Literal

from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.records import MCP_HINTS, ToolRecord, read_tool_records


def tool_json(record: ToolRecord) -> dict[str, Any]:
    """``record`` (a complete one: ``read_tool_records``) as the JSON ``toolkg mcp`` answers with."""
    annotations = record.annotations
    other = json.loads(annotations.other_json) if annotations and annotations.other_json else {}
    for hint, field in MCP_HINTS.items():
        value = getattr(annotations, field, None)
        if value is not None:
            other[hint] = value
    properties: dict[str, dict[str, Any]] = {}
    for p in record.parameters:
        schema: dict[str, Any] = {}
        if p.json_type not in ("", "any"):
            schema["type"] = p.json_type
        if p.description:
            schema["description"] = p.description
        if p.enum:
            schema["enum"] = [_json(v) for v in p.enum]
        if p.default is not None:
            schema["default"] = _json(p.default)
        if p.nested:  # an object's properties, an array's items: shown as the manifest gave them
            schema.update(json.loads(p.nested))
        if p.location not in ("", "argument"):
            schema["x-location"] = p.location  # OpenAPI: path, query, header...
        properties[p.name] = schema
    return {
        "id": record.id,
        "server": record.server_id,
        "server_name": record.server_name or record.server_id,
        "name": record.name,
        "title": (annotations.title if annotations else None) or "",
        "description": record.description,
        "input_schema": {
            "type": "object",
            "properties": properties,
            "required": [p.name for p in record.parameters if p.required],
        },
        "outputs": [{"name": o.name, "type": o.json_type} for o in record.outputs],
        "annotations": other,
    }


def tool_details(store: ToolStore, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{tool id: tool_json}`` for the stored tools among ``ids`` (unknown ids are left out)."""
    return {tool_id: tool_json(record) for tool_id, record in read_tool_records(store, ids).items()}


def resolve_tool(store: ToolStore, text: str) -> list[str]:
    """Tool ids ``text`` names: itself when it is a stored ``server::tool`` id, else the tools of that name."""
    rows = store.select(
        "SELECT ?id ?text WHERE { { ?t tk:identifier ?text } UNION { ?t tk:name ?text } "
        "?t a tk:Tool ; tk:identifier ?id }",
        {"text": Literal(text)},
    )
    return sorted({r["id"].value for r in rows})


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
