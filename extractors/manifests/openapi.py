"""OpenAPI 3.0 / 3.1 and Swagger 2.0 documents: the API is the server, each operation a tool.

Tool name: ``operationId``, else ``<method>_<path>`` with the path's punctuation folded to
underscores (also for an operation whose operationId an earlier one already took). Parameters: path,
query, header and cookie parameters (operation-level overriding path-level by name + location) plus the
JSON request body's properties (an ``allOf``'s merged). Output: the first 2xx response's JSON schema; its
``links`` are declared dependencies of the operations they name (``openapi_links``). Local
``$ref``s (``#/...``) are resolved, an operation's own too. Swagger 2.0 is read as its converters to OpenAPI 3
read it: a ``body`` parameter is the request body, ``formData`` parameters its properties, a parameter's own
``type`` its schema, a response's ``schema`` its output.

Descriptions are read as other OpenAPI tools read them (``laxities``): booleans written as text, nameless
properties, ``$ref``s that cannot be followed, junk where a keyword belongs and Swagger 2 habits each cost
the one part they are in and leave a notice. Only what is no document, path item or operation at all, and
names no client could call, are refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from toolkg.errors import ItemError, ManifestError
from toolkg.extractors.manifests.formats import (
    ParsedServers,
    checked_tool,
    excerpt,
    server_id_from,
    server_name,
    str_or_none,
)
from toolkg.extractors.manifests.laxities import (
    PARAMETER_BOOLEAN_KEYS,
    Lenient,
    Notes,
    Refs,
    boolean_field,
    kind_of,
    shown,
    text_field,
)
from toolkg.extractors.manifests.openapi_links import declared_links
from toolkg.extractors.manifests.schema import (
    output_schema_name,
    outputs_from_schema,
    parameter_from_schema,
    parameters_from_object_schema,
    require_mapping,
)
from toolkg.failures import quarantine
from toolkg.limits import Limits
from toolkg.models import Notice, Parameter, QuarantinedItem, Server, Tool

HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_LOCATIONS = ("path", "query", "header", "cookie")
_SWAGGER2_BODY = {"body": "the request body", "formdata": "a request body property"}
_NAME_RE = re.compile(r"[^A-Za-z0-9]+")


def _route_name(method: str, route: str) -> str:
    return f"{method}_{_NAME_RE.sub('_', route).strip('_')}" if route.strip("/") else method


def _tool_name(method: str, route: str, operation: Mapping[str, Any], taken: Mapping[str, str], notes: Notes) -> str:
    """The operationId, else the route's name; an operationId an earlier operation took (``taken``: name ->
    'GET /route') leaves this one its route's name, as openapi-generator renames a duplicate."""
    operation_id = operation.get("operationId")
    if isinstance(operation_id, str) and operation_id.strip():
        name = operation_id.strip()
        fallback = _route_name(method, route)
        if name in taken and fallback not in taken:
            notes.add(
                "",
                f"operationId {shown(name)} is already used by {taken[name]}: named {shown(fallback)} after its route",
            )
            return fallback
        return name
    if operation_id is not None and not isinstance(operation_id, str):
        notes.add("", f"operationId {shown(operation_id)} is not text: named after its route")
    return _route_name(method, route)


def _parameter_entries(scope: Any, where: str, notes: Notes) -> list[Any]:
    if scope is None or isinstance(scope, list):
        return scope or []
    if isinstance(scope, Mapping):  # written as name -> parameter: the values are the parameters
        notes.add(where, "parameters is an object, not a list: its values read as the parameters")
        return list(scope.values())
    notes.add(where, f"parameters is {kind_of(scope)}, not a list: ignored")
    return []


def _merged_parameters(
    path_item: Mapping[str, Any], operation: Mapping[str, Any], reader: Lenient
) -> dict[tuple[str, str], tuple[Mapping[str, Any], str]]:
    """(name, location) -> (parameter object, its 'in' as written): path-level first, the operation's over them.
    A parameter that cannot be followed or has no name or place is dropped with a note."""
    notes = reader.notes
    merged: dict[tuple[str, str], tuple[Mapping[str, Any], str]] = {}
    for scope, label in ((path_item.get("parameters"), "path parameter"), (operation.get("parameters"), "parameter")):
        for index, raw in enumerate(_parameter_entries(scope, label + "s", notes), start=1):
            where = f"{label} #{index}"
            raw = reader.follow(raw, where, "parameter dropped")
            if raw is None:
                continue
            if not isinstance(raw, Mapping):
                notes.add(where, f"is {kind_of(raw)}, not an object: parameter dropped")
                continue
            name, written = raw.get("name"), raw.get("in")
            if not isinstance(name, str) or not name.strip():
                notes.add(
                    where,
                    "no name: parameter dropped"
                    if name in (None, "") or isinstance(name, str)
                    else f"name {shown(name)} is not text: parameter dropped",
                )
                continue
            location = written.strip().lower() if isinstance(written, str) else ""
            if location not in _LOCATIONS and location not in _SWAGGER2_BODY:
                notes.add(
                    f"parameter {name!r}",
                    f"in {shown(written)} is not path, query, header or cookie: parameter dropped",
                )
                continue
            if location in _LOCATIONS and written != location:
                notes.add(f"parameter {name!r}", f"in {shown(written)} read as {shown(location)}")
            assert isinstance(written, str), "a location was read from it"
            merged[(name, location)] = (raw, written)
    return merged


def _operation_parameters(
    path_item: Mapping[str, Any], operation: Mapping[str, Any], reader: Lenient, item: str
) -> list[Parameter]:
    notes = reader.notes
    parameters: list[Parameter] = []
    for (name, location), (raw, written) in _merged_parameters(path_item, operation, reader).items():
        where = f"parameter {name!r}"
        required = boolean_field(raw, "required", where, notes, default=location == "path")
        for key in PARAMETER_BOOLEAN_KEYS:
            boolean_field(raw, key, where, notes)
        description = text_field(raw, "description", where, notes)
        swagger2 = reader.refs.swagger2
        if location in _SWAGGER2_BODY and not swagger2:
            notes.add(where, f"in {shown(written)} is Swagger 2: read as {_SWAGGER2_BODY[location]}")
        if location == "body":  # Swagger 2: the body is a parameter whose schema is the request body's
            parameters += _body_parameters(raw.get("schema"), required, name, description, reader, item, where)
            continue
        parameters.append(
            parameter_from_schema(
                name,
                _parameter_schema(raw, where, notes, swagger2),
                required=required,
                item=item,
                location="body" if location == "formdata" else location,  # type: ignore[arg-type]
                resolve=reader,
                description=description or None,
            )
        )
    body = reader.follow(operation.get("requestBody"), "request body", "no request body read")
    if body is not None and not isinstance(body, Mapping):
        notes.add("request body", f"is {kind_of(body)}, not an object: ignored")
    elif body is not None:
        schema = _json_schema(body.get("content"), "request body", notes)
        if schema is not None:
            required = boolean_field(body, "required", "request body", notes)
            description = text_field(body, "description", "request body", notes)
            parameters += _body_parameters(schema, required, "body", description, reader, item, "request body schema")
    return parameters


def _parameter_schema(raw: Mapping[str, Any], where: str, notes: Notes, swagger2: bool = False) -> Any:
    """A parameter's schema: its ``schema``, else its ``content``'s, else (Swagger 2) its own type fields,
    Swagger 2's ``type: file`` (a form upload) read as a binary string, as the OpenAPI 3 converters do."""
    if raw.get("schema") is not None:
        return raw["schema"]
    if raw.get("content") is not None:
        return _json_schema(raw["content"], where, notes) or {}
    if "type" in raw:
        if not swagger2:
            notes.add(where, "type given on the parameter, not in a schema (Swagger 2): read as its schema")
        schema = {key: raw[key] for key in ("type", "enum", "default", "items", "format") if key in raw}
        if schema["type"] == "file":
            schema.update(type="string", format="binary")
        return schema
    return {}


def _body_parameters(
    schema: Any, required: bool | None, name: str, description: str, reader: Lenient, item: str, what: str
) -> list[Parameter]:
    """An object body's properties (its ``allOf`` parts' merged in), each a parameter (all optional when the
    body is); another body, one parameter called ``name``: also an object whose fields are not listed (one
    of several shapes, a map), as openapi-generator makes it."""
    schema = reader(schema, what)
    if "properties" in schema:
        found = parameters_from_object_schema(schema, item=item, location="body", resolve=reader, what=what)
        return [p.model_copy(update={"required": False}) for p in found] if required is False else found
    return [
        parameter_from_schema(
            name, schema, required=bool(required), item=item, location="body", resolve=reader, description=description
        )
    ]


def _json_schema(content: Any, where: str, notes: Notes) -> Any:
    """The schema of the JSON media type (or the first media type) of a content map."""
    if content is not None and not isinstance(content, Mapping):
        notes.add(where, f"content is {kind_of(content)}, not an object: ignored")
    if not isinstance(content, Mapping) or not content:
        return None
    for media_type, entry in content.items():
        if "json" in str(media_type) and isinstance(entry, Mapping):
            return entry.get("schema")
    first = next(iter(content.values()))
    return first.get("schema") if isinstance(first, Mapping) else None


def _output_schema(operation: Mapping[str, Any], reader: Lenient) -> Any:
    responses = operation.get("responses")
    if not isinstance(responses, Mapping):
        if responses is not None:
            reader.notes.add("", f"responses is {kind_of(responses)}, not an object: no output read")
        return None
    codes = sorted(str(code) for code in responses if str(code).startswith("2"))
    for code in codes:
        where = f"response {code!r}"
        raw = responses.get(code, responses.get(int(code) if code.isdigit() else code))
        response = reader.follow(raw, where, "no output read")
        if isinstance(response, Mapping):
            if reader.refs.swagger2 or ("schema" in response and "content" not in response):
                if not reader.refs.swagger2:
                    reader.notes.add(where, "schema given on the response, not in its content (Swagger 2): read")
                schema = response.get("schema")  # Swagger 2: the response's schema, not its content's
                if isinstance(schema, Mapping) and schema.get("type") == "file":
                    schema = {**schema, "type": "string", "format": "binary"}
            else:
                schema = _json_schema(response.get("content"), where, reader.notes)
            if schema is not None:
                return schema
    return None


def _followed_operation(operation: Mapping[str, Any], refs: Refs, notes: Notes) -> Mapping[str, Any]:
    """An operation written as a ``$ref`` (multi-file descriptions keep each operation in a file of its own):
    its target, or, when that cannot be read (another file, nowhere, no object), the operation's other keys
    alone, so the tool is still there, named after its route, with a note."""
    instead = "read from its route alone"
    followed = refs.follow(operation, "operation", notes, instead)
    if followed is not None and not isinstance(followed, Mapping):
        notes.add("operation", f"$ref {shown(operation['$ref'])} is {kind_of(followed)}, not an object: {instead}")
        followed = None
    return {k: v for k, v in operation.items() if k != "$ref"} if followed is None else followed


def _operation(
    server_id: str, name: str, path_item: Mapping[str, Any], refs: Refs, notes: Notes
) -> Callable[[Mapping[str, Any], str], Tool]:
    """The parser of one operation for ``checked_tool``; what it reads leniently goes to ``notes``."""

    def parse(operation: Mapping[str, Any], label: str) -> Tool:
        reader = Lenient(refs, notes)
        summary = text_field(operation, "summary", "", notes)
        description = text_field(operation, "description", "", notes)
        # Summary first; the description often repeats it, so keep it only when it adds text.
        text = summary if description in ("", summary) else f"{summary} {description}".strip()
        parameters = tuple(_operation_parameters(path_item, operation, reader, label))  # its notes first
        output = _output_schema(operation, reader)
        return Tool(
            server_id=server_id,
            name=name,
            description=text,
            parameters=parameters,
            outputs=tuple(outputs_from_schema(output, item=label, resolve=reader)),
            output_schema_name=output_schema_name(output, reader),
        )

    return parse


def parse_openapi(path: str, document: Any, server: str | None, limits: Limits | None = None) -> ParsedServers:
    """The API as one server, each operation a tool, what was read leniently as notices.

    Raises ``ManifestError`` only for a document that cannot be read at all (no object, neither OpenAPI 3
    nor Swagger 2.0, ``paths`` no object); a path item or operation that cannot be read is a quarantine entry."""
    limits = limits or Limits()
    if not isinstance(document, Mapping):
        raise ManifestError(path, "an OpenAPI document must be an object")
    if "openapi" not in document and "swagger" in document:
        version = str(document.get("swagger"))
        if version.strip() not in ("2", "2.0"):
            raise ManifestError(path, f"unsupported Swagger version {version[:20]!r} (2.0 is supported)")
    else:
        version = str(document.get("openapi", "")).strip()
        if not (version == "3" or version.startswith("3.")):  # YAML reads openapi: 3.0 as a number: '3.0'
            raise ManifestError(
                path, f"unsupported OpenAPI version {version[:20]!r} (3.0 and 3.1, and Swagger 2.0, are supported)"
            )
    info_value = document.get("info")
    info: Mapping[str, Any] = info_value if isinstance(info_value, Mapping) else {}
    title = info.get("title") if isinstance(info.get("title"), str) else ""
    server_id = server_id_from(server or title or Path(path).stem)
    paths = document.get("paths") or {}
    if not isinstance(paths, Mapping):
        raise ManifestError(path, "'paths' must be an object")
    refs = Refs(document)
    operations: list[tuple[Tool, Mapping[str, Any]]] = []  # each tool read, with its operation (links)
    quarantined: list[QuarantinedItem] = []
    notices: list[Notice] = []
    taken: dict[str, str] = {}  # tool name -> the operation that has it ('GET /pets')
    for route, path_item in paths.items():
        route = str(route)
        route_notes = Notes()
        path_item = refs.follow(path_item, "path item", route_notes, "its operations are not read")
        notices += [Notice(source=path, item=f"{server_id}::{route[:200]}", what=note) for note in route_notes]
        if path_item is None:
            continue
        if not isinstance(path_item, Mapping):
            quarantined.append(
                QuarantinedItem(
                    source=path,
                    item=f"{server_id}::{route[:200]}",
                    stage="parse",
                    reason="path item must be an object",
                    raw=excerpt(path_item),
                )
            )
            continue
        for method in HTTP_METHODS:
            operation = path_item.get(method)
            if operation is None:
                continue
            label = f"{server_id}::{method.upper()} {route[:200]}"
            notes = Notes()
            try:
                if isinstance(operation, Mapping) and "$ref" in operation:
                    operation = _followed_operation(operation, refs, notes)
                operation = require_mapping(operation, "operation", label)
                name = _tool_name(method, route, operation, taken, notes)
                if len(name) <= limits.max_name_chars:
                    label = f"{server_id}::{name}"
                if name in taken:
                    raise ItemError(label, f"duplicate tool name {name!r}")

                tool, trimmed = checked_tool(
                    operation, label, _operation(server_id, name, path_item, refs, notes), limits
                )
                tool = tool.model_copy(update={"route": f"{method.upper()} {route}"[: limits.max_description_chars]})
                operations.append((tool, operation))
                notices += [Notice(source=path, item=tool.id, what=note) for note in [*notes, *trimmed]]
                taken[name] = f"{method.upper()} {route[:200]}"
            except Exception as exc:
                quarantined.append(quarantine(exc, source=path, item=label, stage="parse", raw=operation))
    tools, link_notes = declared_links(operations, refs, Path(path).name)
    notices += [Notice(source=path, item=item, what=what) for item, what in link_notes]
    tags_value = document.get("tags")
    listed = tags_value if isinstance(tags_value, list) else []
    tags = [t.get("name") for t in listed if isinstance(t, Mapping) and isinstance(t.get("name"), str)]
    description_value = info.get("description")
    description = description_value if isinstance(description_value, str) else ""
    result = Server(
        id=server_id,
        name=server_name(title, server_id, limits),
        description=description[: limits.max_description_chars].strip(),
        category=str_or_none(tags[0]) if len(tags) == 1 else None,
        version=str_or_none(str(info["version"])) if isinstance(info.get("version"), str | int | float) else None,
        tools=tuple(tools),
    )
    return ParsedServers([result], quarantined, notices)
