"""A stored tool read back, one shape for every reader: ``ToolRecord``.

A ``ToolRecord`` is the manifest's ``models.Tool`` (so inference, links and sync take it as they take a
parsed tool) plus what only the store knows: the server's display name and the tool's node. Two reads
fill it, to two depths, because they serve different costs:

* :func:`read_tools` -- every tool, with what the catalog-wide stages and the retrievers read (name,
  description, parameters with name, JSON type, required, location, description and sorted enum values,
  output names and JSON types, and the schema names ``$ref``s gave the outputs). Other fields keep their
  model defaults. Inference reads the JSON types (a boolean flag is no identifier another tool returns), so
  a build sees what ``infer_dependencies`` sees over the parsed manifest.
* :func:`read_tool_records` / :func:`read_tool` -- the few tools an agent asked for, complete: JSON
  types, defaults, enum values, outputs with their types, annotations (title, hints, other keys) and
  the server's name. ``store/tool_details.tool_json`` renders one as ``toolkg mcp`` answers it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from toolkg.models import Annotations, OutputField, Parameter, Tool
from toolkg.ontology import iris
from toolkg.store.oxigraph_store import Term, ToolStore
from toolkg.store.sparql_terms import values_clause


class ToolRecord(Tool):
    """A ``Tool`` read back from the store (see the module doc for which fields each read fills)."""

    server_name: str = ""  # the server's tk:name; read_tool_records only ("" from read_tools)

    @property
    def iri(self) -> str:
        """The tool's node (``iris.tool_iri``): where graph walks start from."""
        return iris.tool_iri(self.server_id, self.name).value


def read_tools(store: ToolStore) -> list[ToolRecord]:
    """Every stored tool, sorted by id, with the catalog fields (the module doc).

    A tool's node is ``iris.tool_iri_from_id(tool.id)`` (its server id is the part of its
    identifier before ``::``; server ids never hold ``::``)."""
    tools: dict[str, dict] = {}
    for row in store.select("""SELECT ?t ?id ?name ?description ?route ?schema WHERE {
            ?t a tk:Tool ; tk:identifier ?id ; tk:name ?name . OPTIONAL { ?t dcterms:description ?description }
            OPTIONAL { ?t tk:httpRoute ?route } OPTIONAL { ?t tk:schemaName ?schema } }"""):
        server_id = row["id"].value.partition("::")[0]
        description = row["description"].value if row.get("description") else ""
        route = row["route"].value if row.get("route") else None
        tools[row["t"].value] = {
            "server_id": server_id,
            "name": row["name"].value,
            "description": description,
            "route": route,
            "output_schema_name": row["schema"].value if row.get("schema") else None,
        }
    parameters: dict[str, list[tuple[int, Parameter]]] = defaultdict(list)
    for row in store.select("""SELECT ?t ?name ?type ?required ?location ?position ?description WHERE {
            ?t tk:hasParameter ?p . ?p tk:name ?name ; tk:required ?required ; tk:location ?location ;
               tk:position ?position . OPTIONAL { ?p dcterms:description ?description }
            OPTIONAL { ?p tk:jsonType ?type } }"""):
        parameters[row["t"].value].append(
            (
                int(row["position"].value),
                Parameter(
                    name=row["name"].value,
                    json_type=_text(row.get("type")) or "any",
                    required=row["required"].value == "true",
                    location=row["location"].value,
                    description=row["description"].value if row.get("description") else "",
                ),
            )
        )
    enums: dict[tuple[str, str], list[str]] = defaultdict(list)
    rows = store.select(
        "SELECT ?t ?name ?value WHERE { ?t tk:hasParameter ?p . ?p tk:name ?name ; tk:enumValue ?value }"
    )
    for row in rows:
        enums[(row["t"].value, row["name"].value)].append(row["value"].value)
    for node, items in parameters.items():
        items[:] = [
            (i, p.model_copy(update={"enum": tuple(sorted(enums[(node, p.name)]))}) if (node, p.name) in enums else p)
            for i, p in items
        ]
    outputs: dict[str, list[OutputField]] = defaultdict(list)
    for row in store.select(
        """SELECT ?t ?name ?type ?schema WHERE { ?t tk:hasOutput ?o . ?o tk:name ?name
            OPTIONAL { ?o tk:schemaName ?schema } OPTIONAL { ?o tk:jsonType ?type } }"""
    ):
        schema = row["schema"].value if row.get("schema") else None
        output = OutputField(name=row["name"].value, json_type=_text(row.get("type")) or "any", schema_name=schema)
        outputs[row["t"].value].append(output)
    out = [
        ToolRecord(
            **fields,
            parameters=tuple(p for _, p in sorted(parameters.get(node, []), key=lambda x: x[0])),
            outputs=tuple(outputs.get(node, [])),
        )
        for node, fields in tools.items()
    ]
    return sorted(out, key=lambda t: t.id)


def _text(term: Term | None) -> str:
    return term.value if term is not None else ""


# The MCP hints, as the store names them -> the Annotations field that holds each.
MCP_HINTS = {
    "readOnlyHint": "read_only",
    "destructiveHint": "destructive",
    "idempotentHint": "idempotent",
    "openWorldHint": "open_world",
}


def read_tool_records(store: ToolStore, ids: Iterable[str]) -> dict[str, ToolRecord]:
    """``{tool id: complete record}`` for the stored tools among ``ids`` (unknown ids are left out), in
    the order of ``ids``. Enum values keep the order the store gives them; an output with no stored
    JSON type reads ``""``."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    found: dict[str, dict] = {}
    for row in store.select(f"""SELECT ?id ?name ?description ?title ?server ?serverName ?other ?route WHERE {{
            {values_clause("id", wanted)}
            ?t a tk:Tool ; tk:identifier ?id ; tk:name ?name ; tk:ownedBy ?s .
            ?s tk:identifier ?server . OPTIONAL {{ ?s tk:name ?serverName }}
            OPTIONAL {{ ?t dcterms:description ?description }} OPTIONAL {{ ?t dcterms:title ?title }}
            OPTIONAL {{ ?t tk:annotationsJson ?other }} OPTIONAL {{ ?t tk:httpRoute ?route }} }}"""):
        found[row["id"].value] = {
            "server_id": row["server"].value,
            "server_name": _text(row.get("serverName")) or row["server"].value,
            "name": row["name"].value,
            "description": _text(row.get("description")),
            "route": row["route"].value if row.get("route") else None,
            "annotations": {"title": row["title"].value if row.get("title") else None, "other_json": None},
            "parameters": [],
            "outputs": [],
        }
        if row.get("other"):
            found[row["id"].value]["annotations"]["other_json"] = row["other"].value
    for row in store.select(f"""SELECT ?id ?hint ?value WHERE {{
            {values_clause("id", wanted)}
            VALUES ?hint {{ tk:readOnlyHint tk:destructiveHint tk:idempotentHint tk:openWorldHint }}
            ?t tk:identifier ?id ; ?hint ?value }}"""):
        if row["id"].value in found:
            hint = MCP_HINTS[row["hint"].value.rsplit("#", 1)[-1]]
            found[row["id"].value]["annotations"][hint] = row["value"].value == "true"
    _read_parameters(store, wanted, found)
    for row in store.select(f"""SELECT ?id ?name ?type ?position WHERE {{
            {values_clause("id", wanted)}
            ?t tk:identifier ?id ; tk:hasOutput ?o . ?o tk:name ?name ; tk:position ?position .
            OPTIONAL {{ ?o tk:jsonType ?type }} }} ORDER BY ?id xsd:integer(?position)"""):
        if row["id"].value in found:
            output = OutputField(name=row["name"].value, json_type=_text(row.get("type")))
            found[row["id"].value]["outputs"].append(output)
    return {
        tool_id: ToolRecord(
            **{key: value for key, value in fields.items() if key not in ("annotations", "parameters", "outputs")},
            annotations=Annotations(**fields["annotations"]),
            parameters=tuple(fields["parameters"]),
            outputs=tuple(fields["outputs"]),
        )
        for tool_id in wanted
        if (fields := found.get(tool_id)) is not None
    }


def _read_parameters(store: ToolStore, wanted: list[str], found: dict[str, dict]) -> None:
    enums: dict[tuple[str, str], list[str]] = defaultdict(list)
    for row in store.select(f"""SELECT ?id ?name ?value WHERE {{
            {values_clause("id", wanted)}
            ?t tk:identifier ?id ; tk:hasParameter ?p . ?p tk:name ?name ; tk:enumValue ?value }}"""):
        enums[(row["id"].value, row["name"].value)].append(row["value"].value)
    for row in store.select(f"""SELECT ?id ?name ?type ?required ?location ?description ?default ?nested WHERE {{
            {values_clause("id", wanted)}
            ?t tk:identifier ?id ; tk:hasParameter ?p . ?p tk:name ?name ; tk:position ?position ;
               tk:required ?required . OPTIONAL {{ ?p tk:jsonType ?type }} OPTIONAL {{ ?p tk:location ?location }}
            OPTIONAL {{ ?p dcterms:description ?description }} OPTIONAL {{ ?p tk:defaultValue ?default }}
            OPTIONAL {{ ?p tk:nestedSchema ?nested }} }} ORDER BY ?id xsd:integer(?position)"""):
        tool = found.get(row["id"].value)
        if tool is None:
            continue
        name = row["name"].value
        tool["parameters"].append(
            Parameter(
                name=name,
                json_type=_text(row.get("type")) or "any",
                description=_text(row.get("description")),
                required=row["required"].value == "true",
                enum=tuple(enums.get((row["id"].value, name), ())),
                default=row["default"].value if row.get("default") is not None else None,
                location=_text(row.get("location")) or "argument",
                nested=row["nested"].value if row.get("nested") is not None else None,
            )
        )


def read_tool(store: ToolStore, tool_id: str) -> ToolRecord | None:
    """One complete record (``read_tool_records``), or None when no stored tool has ``tool_id``."""
    return read_tool_records(store, [tool_id]).get(tool_id)
