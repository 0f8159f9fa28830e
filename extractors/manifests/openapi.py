"""OpenAPI 3.0 / 3.1 documents: the API is the server, each operation a tool.

Tool name: ``operationId``, else ``<method>_<path>`` with the path's punctuation folded to
underscores. Parameters: path, query, header and cookie parameters (operation-level
overriding path-level by name + location) plus the JSON request body's properties. Output:
the first 2xx response's JSON schema. Local ``$ref``s (``#/components/...``) are resolved.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
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
from toolkg.extractors.manifests.schema import (
    optional_str,
    outputs_from_schema,
    parameter_from_schema,
    parameters_from_object_schema,
    require_mapping,
)
from toolkg.failures import quarantine
from toolkg.limits import Limits
from toolkg.models import Notice, Parameter, QuarantinedItem, Server, Tool

HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_LOCATIONS = {"path", "query", "header", "cookie"}
_NAME_RE = re.compile(r"[^A-Za-z0-9]+")


class _Refs:
    """Resolves local JSON pointers, refusing cycles and remote references."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.document = document

    def __call__(self, node: Any) -> Any:
        seen: set[str] = set()
        while isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if not ref.startswith("#/"):
                raise ItemError(ref, "only local $ref ('#/...') is supported")
            if ref in seen:
                raise ItemError(ref, "circular $ref")
            seen.add(ref)
            node = self._pointer(ref)
        return node

    def _pointer(self, ref: str) -> Any:
        node: Any = self.document
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                raise ItemError(ref, f"$ref {ref!r} points nowhere")
            node = node[part]
        return node


def _tool_name(method: str, route: str, operation: Mapping[str, Any]) -> str:
    operation_id = operation.get("operationId")
    if isinstance(operation_id, str) and operation_id.strip():
        return operation_id.strip()
    return f"{method}_{_NAME_RE.sub('_', route).strip('_')}" if route.strip("/") else method


def _operation_parameters(
    path_item: Mapping[str, Any], operation: Mapping[str, Any], refs: _Refs, item: str
) -> list[Parameter]:
    merged: dict[tuple[str, str], Mapping[str, Any]] = {}
    for scope in (path_item.get("parameters") or [], operation.get("parameters") or []):
        if not isinstance(scope, list):
            raise ItemError(item, "parameters must be a list")
        for raw in scope:
            raw = require_mapping(refs(raw), "parameter", item)
            name, location = raw.get("name"), raw.get("in")
            if not isinstance(name, str) or location not in _LOCATIONS:
                raise ItemError(
                    item, f"parameter needs a name and 'in' of {sorted(_LOCATIONS)}, got {name!r}/{location!r}"
                )
            merged[(name, location)] = raw
    parameters = []
    for (name, location), raw in merged.items():
        required = raw.get("required", location == "path")
        if not isinstance(required, bool):
            raise ItemError(item, f"parameter {name!r}: required must be a boolean")
        schema = raw.get("schema") or {}
        description = optional_str(raw.get("description"), f"parameter {name!r} description", item)
        parameters.append(
            parameter_from_schema(
                name,
                schema,
                required=required,
                item=item,
                location=location,  # type: ignore[arg-type]
                resolve=refs,
                description=description or None,
            )
        )
    body = refs(operation.get("requestBody"))
    if isinstance(body, Mapping):
        schema = _json_schema(body.get("content"), refs)
        if schema is not None:
            schema = require_mapping(refs(schema), "request body schema", item)
            if "properties" in schema or schema.get("type") == "object":
                body_params = parameters_from_object_schema(schema, item=item, location="body", resolve=refs)
                if body.get("required") is False:
                    body_params = [p.model_copy(update={"required": False}) for p in body_params]
                parameters.extend(body_params)
            else:
                parameters.append(
                    parameter_from_schema(
                        "body",
                        schema,
                        required=bool(body.get("required", False)),
                        item=item,
                        location="body",
                        resolve=refs,
                        description=optional_str(body.get("description"), "request body description", item),
                    )
                )
    return parameters


def _json_schema(content: Any, refs: _Refs) -> Any:
    """The schema of the JSON media type (or the first media type) of a content map."""
    if not isinstance(content, Mapping) or not content:
        return None
    for media_type, entry in content.items():
        if "json" in media_type and isinstance(entry, Mapping):
            return entry.get("schema")
    first = next(iter(content.values()))
    return first.get("schema") if isinstance(first, Mapping) else None


def _output_schema(operation: Mapping[str, Any], refs: _Refs) -> Any:
    responses = operation.get("responses")
    if not isinstance(responses, Mapping):
        return None
    codes = sorted(str(code) for code in responses if str(code).startswith("2"))
    for code in codes:
        response = refs(responses.get(code, responses.get(int(code) if code.isdigit() else code)))
        if isinstance(response, Mapping):
            schema = _json_schema(response.get("content"), refs)
            if schema is not None:
                return schema
    return None


def parse_openapi(path: str, document: Any, server: str | None, limits: Limits | None = None) -> ParsedServers:
    limits = limits or Limits()
    if not isinstance(document, Mapping):
        raise ManifestError(path, "an OpenAPI document must be an object")
    version = str(document.get("openapi", ""))
    if not version.startswith("3."):
        raise ManifestError(path, f"unsupported OpenAPI version {version[:20]!r} (3.0 and 3.1 are supported)")
    info = document.get("info") if isinstance(document.get("info"), Mapping) else {}
    title = info.get("title") if isinstance(info.get("title"), str) else ""
    server_id = server_id_from(server or title or Path(path).stem)
    paths = document.get("paths") or {}
    if not isinstance(paths, Mapping):
        raise ManifestError(path, "'paths' must be an object")
    refs = _Refs(document)
    tools: list[Tool] = []
    quarantined: list[QuarantinedItem] = []
    notices: list[Notice] = []
    seen: set[str] = set()
    for route, path_item in paths.items():
        route = str(route)
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
            try:
                operation = require_mapping(operation, "operation", label)
                name = _tool_name(method, route, operation)
                if len(name) <= limits.max_name_chars:
                    label = f"{server_id}::{name}"
                if name in seen:
                    raise ItemError(label, f"duplicate tool name {name!r}")

                def parse(operation: Mapping[str, Any], label: str, name: str = name, item=path_item) -> Tool:
                    summary = optional_str(operation.get("summary"), "summary", label)
                    description = optional_str(operation.get("description"), "description", label)
                    # Summary first; the description often repeats it, so keep it only when it adds text.
                    text = summary if description in ("", summary) else f"{summary} {description}".strip()
                    return Tool(
                        server_id=server_id,
                        name=name,
                        description=text,
                        parameters=tuple(_operation_parameters(item, operation, refs, label)),
                        outputs=tuple(outputs_from_schema(_output_schema(operation, refs), item=label, resolve=refs)),
                    )

                tool, notes = checked_tool(operation, label, parse, limits)
                tools.append(tool)
                notices += [Notice(source=path, item=tool.id, what=note) for note in notes]
                seen.add(name)
            except Exception as exc:
                quarantined.append(quarantine(exc, source=path, item=label, stage="parse", raw=operation))
    tags = [
        t.get("name") for t in document.get("tags") or [] if isinstance(t, Mapping) and isinstance(t.get("name"), str)
    ]
    description = info.get("description") if isinstance(info.get("description"), str) else ""
    result = Server(
        id=server_id,
        name=server_name(title, server_id, limits),
        description=description[: limits.max_description_chars].strip(),
        category=str_or_none(tags[0]) if len(tags) == 1 else None,
        version=str_or_none(str(info["version"])) if isinstance(info.get("version"), str | int | float) else None,
        tools=tuple(tools),
    )
    return ParsedServers([result], quarantined, notices)
