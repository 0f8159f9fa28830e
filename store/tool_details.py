"""A tool as an agent needs to call it, read back from the store: its server, description, annotations
and an input JSON Schema rebuilt from its stored parameters (type, description, enum, default,
required), plus its outputs. What ``toolkg mcp``'s ``get_tool`` / ``search_tools`` return."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from pyoxigraph import Literal

from toolkg.store.oxigraph_store import ToolStore


def _values(ids: list[str]) -> str:
    return " ".join(json.dumps(i) for i in ids)


def tool_details(store: ToolStore, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{tool id: details}`` for the stored tools among ``ids`` (unknown ids are left out)."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    found: dict[str, dict[str, Any]] = {}
    for row in store.select(f"""SELECT ?id ?name ?description ?title ?server ?serverName ?other WHERE {{
            VALUES ?id {{ {_values(wanted)} }}
            ?t a tk:Tool ; tk:identifier ?id ; tk:name ?name ; tk:ownedBy ?s .
            ?s tk:identifier ?server . OPTIONAL {{ ?s tk:name ?serverName }}
            OPTIONAL {{ ?t dcterms:description ?description }} OPTIONAL {{ ?t dcterms:title ?title }}
            OPTIONAL {{ ?t tk:annotationsJson ?other }} }}"""):
        tool_id = row["id"].value
        found[tool_id] = {
            "id": tool_id,
            "server": row["server"].value,
            "server_name": _text(row.get("serverName")) or row["server"].value,
            "name": row["name"].value,
            "title": _text(row.get("title")),
            "description": _text(row.get("description")),
            "input_schema": {"type": "object", "properties": {}, "required": []},
            "outputs": [],
            "annotations": json.loads(row["other"].value) if row.get("other") else {},
        }
    for row in store.select(f"""SELECT ?id ?hint ?value WHERE {{
            VALUES ?id {{ {_values(wanted)} }}
            VALUES ?hint {{ tk:readOnlyHint tk:destructiveHint tk:idempotentHint tk:openWorldHint }}
            ?t tk:identifier ?id ; ?hint ?value }}"""):
        if row["id"].value in found:
            hint = row["hint"].value.rsplit("#", 1)[-1]
            found[row["id"].value]["annotations"][hint] = row["value"].value == "true"
    _parameters(store, wanted, found)
    for row in store.select(f"""SELECT ?id ?name ?type ?position WHERE {{
            VALUES ?id {{ {_values(wanted)} }}
            ?t tk:identifier ?id ; tk:hasOutput ?o . ?o tk:name ?name ; tk:position ?position .
            OPTIONAL {{ ?o tk:jsonType ?type }} }} ORDER BY ?id xsd:integer(?position)"""):
        if row["id"].value in found:
            found[row["id"].value]["outputs"].append({"name": row["name"].value, "type": _text(row.get("type"))})
    return found


def _parameters(store: ToolStore, wanted: list[str], found: dict[str, dict[str, Any]]) -> None:
    enums: dict[tuple[str, str], list[str]] = defaultdict(list)
    for row in store.select(f"""SELECT ?id ?name ?value WHERE {{
            VALUES ?id {{ {_values(wanted)} }}
            ?t tk:identifier ?id ; tk:hasParameter ?p . ?p tk:name ?name ; tk:enumValue ?value }}"""):
        enums[(row["id"].value, row["name"].value)].append(row["value"].value)
    for row in store.select(f"""SELECT ?id ?name ?type ?required ?location ?description ?default WHERE {{
            VALUES ?id {{ {_values(wanted)} }}
            ?t tk:identifier ?id ; tk:hasParameter ?p . ?p tk:name ?name ; tk:position ?position ;
               tk:required ?required . OPTIONAL {{ ?p tk:jsonType ?type }} OPTIONAL {{ ?p tk:location ?location }}
            OPTIONAL {{ ?p dcterms:description ?description }} OPTIONAL {{ ?p tk:defaultValue ?default }}
            }} ORDER BY ?id xsd:integer(?position)"""):
        tool = found.get(row["id"].value)
        if tool is None:
            continue
        name = row["name"].value
        schema: dict[str, Any] = {}
        if _text(row.get("type")) not in ("", "any"):
            schema["type"] = row["type"].value
        if _text(row.get("description")):
            schema["description"] = row["description"].value
        if enums.get((tool["id"], name)):
            schema["enum"] = [_json(v) for v in enums[(tool["id"], name)]]
        if row.get("default") is not None:
            schema["default"] = _json(row["default"].value)
        if _text(row.get("location")) not in ("", "argument"):
            schema["x-location"] = row["location"].value  # OpenAPI: path, query, header...
        tool["input_schema"]["properties"][name] = schema
        if row["required"].value == "true":
            tool["input_schema"]["required"].append(name)


def resolve_tool(store: ToolStore, text: str) -> list[str]:
    """Tool ids ``text`` names: itself when it is a stored ``server::tool`` id, else the tools of that name."""
    rows = store.select(
        "SELECT ?id ?text WHERE { { ?t tk:identifier ?text } UNION { ?t tk:name ?text } "
        "?t a tk:Tool ; tk:identifier ?id }",
        {"text": Literal(text)},
    )
    return sorted({r["id"].value for r in rows})


def _text(term: Any) -> str:
    return term.value if term is not None else ""


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
