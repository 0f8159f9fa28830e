"""Manifest formats: detection and the parsers for MCP, MCP catalogs, OpenAI and ToolLinkOS.

Every parser returns ``ParsedServers``: servers with their well-formed tools, plus one
quarantine entry per malformed tool (missing name, wrong types, duplicate name). OpenAPI
lives in ``openapi.py``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkg.errors import ItemError, ManifestError
from toolkg.extractors.manifests.fitting import check_depth, check_name, fit_tool
from toolkg.extractors.manifests.schema import (
    json_text,
    local_refs,
    optional_str,
    output_schema_name,
    outputs_from_schema,
    parameter_from_schema,
    parameters_from_object_schema,
    require_mapping,
    require_str,
)
from toolkg.failures import quarantine, raw_text
from toolkg.limits import Limits
from toolkg.models import (
    Annotations,
    DeclaredDependency,
    ManifestFormat,
    Notice,
    OutputField,
    Parameter,
    QuarantinedItem,
    Server,
    Tool,
)
from toolkg.ontology.vocabulary import DEPENDENCY_KINDS, upper_snake

_SERVER_ID_RE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_SERVER_ID = 100  # longer ids are cut and given a hash of the whole, so they stay unique

# ToolLinkOS dependence_type -> ontology sub-property of tk:dependsOn.
DEPENDENCE_KINDS = {upper_snake(kind): kind for kind in DEPENDENCY_KINDS}


@dataclass
class ParsedServers:
    servers: list[Server] = field(default_factory=list)
    quarantined: list[QuarantinedItem] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)  # tools kept but trimmed to fit a limit or read leniently


def server_id_from(text: str) -> str:
    """A server id usable in 'server::tool' ids and IRIs: spaces and odd characters to '-', at most
    ``MAX_SERVER_ID`` characters (a longer one keeps its start and a hash of the whole).

    >>> server_id_from("My Server (beta)"), server_id_from("天气"), len(server_id_from("x" * 500))
    ('My-Server-beta', 'server', 100)
    """
    cleaned = _SERVER_ID_RE.sub("-", text.strip()).strip("-")
    if len(cleaned) > MAX_SERVER_ID:
        digest = hashlib.sha256(cleaned.encode()).hexdigest()[:8]
        cleaned = cleaned[: MAX_SERVER_ID - 9].rstrip("-.") + "-" + digest
    return cleaned or "server"


def server_name(value: Any, fallback: str, limits: Limits) -> str:
    """A server's display name: the manifest's when it is a usable string, else ``fallback``."""
    if isinstance(value, str) and value.strip():
        name = " ".join(value.split())
        if len(name) <= limits.max_name_chars:
            return name
    return fallback


def detect_format(document: Any, path: str) -> ManifestFormat:
    """Guess the manifest format from the document's shape."""
    if isinstance(document, Mapping):
        if "openapi" in document or "swagger" in document:
            return "openapi"  # Swagger 2.0 too: openapi.py reads both
        if "arazzo" in document:
            return "arazzo"  # a workflow document over OpenAPI files: arazzo.py
        if isinstance(document.get("tools"), list) and _openai_entries(document["tools"]):
            return "openai"  # a chat request's (or a wrapper's) "tools": [{"type": "function", ...}]
        if isinstance(document.get("tools"), list) or isinstance(_mapping_get(document, "result", "tools"), list):
            return "mcp"
        if document.get("type") == "function" or {"name", "parameters"} <= document.keys():
            return "openai"
        raise ManifestError(
            path,
            "unrecognised manifest: expected an MCP tools/list result, an OpenAPI or Arazzo document "
            "or OpenAI function tools (use --format to force one)",
        )
    if isinstance(document, list):
        if not document:
            raise ManifestError(path, "manifest is an empty list")
        first = next((entry for entry in document if isinstance(entry, Mapping)), None)
        if first is None:
            raise ManifestError(path, "manifest is a list with no objects in it")
        if isinstance(first.get("tools"), Mapping):
            return "mcp-catalog"
        if first.get("type") == "function" or isinstance(first.get("function"), Mapping):
            return "openai"
        if "depends_on" in first or "func_type" in first or isinstance(first.get("parameters"), list):
            return "toollinkos"
        if "inputSchema" in first:
            return "mcp"
        if "parameters" in first:
            return "openai"
        raise ManifestError(path, "unrecognised list manifest (use --format to force one)")
    raise ManifestError(path, f"manifest must be a JSON object or list, got {type(document).__name__}")


def _openai_entries(entries: list) -> bool:
    """Whether a list of tools is OpenAI's (``{"type": "function", "function": {...}}``), by its first object."""
    first = next((entry for entry in entries if isinstance(entry, Mapping)), None)
    return first is not None and (first.get("type") == "function" or isinstance(first.get("function"), Mapping))


def _mapping_get(document: Mapping[str, Any], *keys: str) -> Any:
    value: Any = document
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def collect_tools(
    source: str,
    server_id: str,
    entries: Any,
    parse_one: Callable[[Mapping[str, Any], str], Tool],
    limits: Limits,
    notices: list[Notice] | None = None,
) -> tuple[list[Tool], list[QuarantinedItem]]:
    """Parse each tool entry; a malformed or duplicate entry is quarantined, the rest kept.

    Whatever goes wrong with one entry (a wrong type, a schema nested past the limit, an
    unexpected error) quarantines that entry alone; ``notices`` collects what was trimmed."""
    if not isinstance(entries, list):
        raise ItemError(server_id, f"tools must be a list, got {type(entries).__name__}")
    tools: list[Tool] = []
    quarantined: list[QuarantinedItem] = []
    first_index: dict[str, int] = {}
    for index, entry in enumerate(entries):
        label = f"{server_id}::#{index}"
        try:
            entry = require_mapping(entry, f"tool #{index}", label)
            name = entry.get("name")
            if isinstance(name, str) and name.strip() and len(name) <= limits.max_name_chars:
                label = f"{server_id}::{name.strip()}"
            tool, notes = checked_tool(entry, label, parse_one, limits)
            if tool.name in first_index:
                raise ItemError(
                    label, f"duplicate tool name {tool.name!r} (first defined at index {first_index[tool.name]})"
                )
            first_index[tool.name] = index
            tools.append(tool)
            if notices is not None:
                notices += [Notice(source=source, item=tool.id, what=note) for note in notes]
        except Exception as exc:
            quarantined.append(quarantine(exc, source=source, item=label, stage="parse", raw=entry))
    return tools, quarantined


def checked_tool(
    entry: Mapping[str, Any], label: str, parse_one: Callable[[Mapping[str, Any], str], Tool], limits: Limits
) -> tuple[Tool, list[str]]:
    """One tool within ``limits``: depth checked before parsing, names checked, long values trimmed."""
    check_depth(entry, label, limits)
    tool = parse_one(entry, label)
    check_name(tool.name, "tool name", label, limits)
    for parameter in tool.parameters:
        check_name(parameter.name, "parameter name", label, limits)
    for output in tool.outputs:
        check_name(output.name, "output name", label, limits)
    return fit_tool(tool, limits)


def excerpt(value: Any, limit: int = 2000) -> str:
    """The offending input, for a quarantine entry: bounded however big or deep ``value`` is."""
    return raw_text(value, limit)


def _annotations(raw: Any, item: str) -> Annotations | None:
    if raw is None:
        return None
    raw = require_mapping(raw, "annotations", item)
    hints = {
        "readOnlyHint": "read_only",
        "destructiveHint": "destructive",
        "idempotentHint": "idempotent",
        "openWorldHint": "open_world",
    }
    values: dict[str, Any] = {}
    other = {}
    for key, value in raw.items():
        if key in hints and (value is None or isinstance(value, bool)):
            values[hints[key]] = value
        elif key == "title" and (value is None or isinstance(value, str)):
            values["title"] = value
        else:
            other[key] = value
    if other:
        values["other_json"] = json_text(other, "annotations", item)
    return Annotations(**values)


# --- MCP ------------------------------------------------------------------------------------


def _mcp_tool(server_id: str) -> Callable[[Mapping[str, Any], str], Tool]:
    def parse(entry: Mapping[str, Any], item: str) -> Tool:
        return Tool(
            server_id=server_id,
            name=require_str(entry.get("name"), "tool name", item).strip(),
            description=optional_str(entry.get("description"), "description", item),
            parameters=tuple(parameters_from_object_schema(entry.get("inputSchema"), item=item)),
            outputs=tuple(
                outputs_from_schema(entry.get("outputSchema"), item=item, resolve=local_refs(entry.get("outputSchema")))
            ),
            output_schema_name=output_schema_name(entry.get("outputSchema"), local_refs(entry.get("outputSchema"))),
            annotations=_titled(_annotations(entry.get("annotations"), item), entry.get("title")),
        )

    return parse


def _titled(annotations: Annotations | None, title: Any) -> Annotations | None:
    """A tool's own ``title`` (MCP 2025-06) when its annotations give none."""
    if not isinstance(title, str) or not title.strip() or (annotations is not None and annotations.title):
        return annotations
    return (annotations or Annotations()).model_copy(update={"title": " ".join(title.split())})


def parse_mcp(path: str, document: Any, server: str | None, limits: Limits | None = None) -> ParsedServers:
    """An MCP ``tools/list`` result (optionally JSON-RPC wrapped, or a bare list of tools)."""
    wrapper: Mapping[str, Any] = {}
    if isinstance(document, Mapping):
        result = document.get("result")
        wrapper = result if isinstance(result, Mapping) else document
        entries = wrapper.get("tools")
    else:
        entries = document
    server_info = wrapper.get("serverInfo")
    info = server_info if isinstance(server_info, Mapping) else {}
    named = server or wrapper.get("server_name") or wrapper.get("server") or info.get("name") or wrapper.get("name")
    limits = limits or Limits()
    server_id = server_id_from(named if isinstance(named, str) and named.strip() else Path(path).stem)
    notices: list[Notice] = []
    tools, quarantined = collect_tools(path, server_id, entries, _mcp_tool(server_id), limits, notices)
    # A live listing (toolkg.live) has no description of its own: the server's instructions describe it.
    description = wrapper.get("description") or info.get("description") or wrapper.get("instructions")
    result = Server(
        id=server_id,
        name=server_name(named, server_id, limits),
        description=description[: limits.max_description_chars].strip() if isinstance(description, str) else "",
        category=str_or_none(wrapper.get("category")),
        homepage=str_or_none(wrapper.get("homepage") or info.get("websiteUrl")),
        version=str_or_none(wrapper.get("version") or info.get("version")),
        tools=tuple(tools),
    )
    return ParsedServers([result], quarantined, notices)


def str_or_none(value: Any, limit: int = 1000) -> str | None:
    """A short metadata string (version, category, homepage) on one line, or None."""
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        return None
    return " ".join(value.split())


def parse_mcp_catalog(path: str, document: Any, server: str | None, limits: Limits | None = None) -> ParsedServers:
    """A list of MCP server entries: ``name``, ``description``, ``category``, ``tools.<key>.tools``."""
    if server:
        raise ManifestError(path, "--server cannot be used with a catalog of several servers")
    if not isinstance(document, list):
        raise ManifestError(path, "an MCP catalog must be a JSON list of server entries")
    limits = limits or Limits()
    parsed = ParsedServers()
    seen: set[str] = set()
    for index, entry in enumerate(document):
        label = f"entry #{index}"
        try:
            entry = require_mapping(entry, label, label)
            label = server_name(entry.get("name"), label, limits)
            groups = require_mapping(entry.get("tools"), "tools", label)
            for key, group in groups.items():
                server_id = server_id_from(key)
                group = require_mapping(group, f"tools.{key}", server_id)
                if server_id in seen:
                    raise ItemError(server_id, f"duplicate server id {server_id!r}")
                seen.add(server_id)
                tools, quarantined = collect_tools(
                    path, server_id, group.get("tools"), _mcp_tool(server_id), limits, parsed.notices
                )
                parsed.quarantined.extend(quarantined)
                parsed.servers.append(
                    Server(
                        id=server_id,
                        name=server_name(entry.get("name"), server_id, limits),
                        description=optional_str(entry.get("description"), "description", label)[
                            : limits.max_description_chars
                        ],
                        category=str_or_none(entry.get("category")),
                        homepage=str_or_none(entry.get("web") or entry.get("homepage")),
                        version=str_or_none(group.get("version")),
                        tools=tuple(tools),
                    )
                )
        except Exception as exc:
            item = exc.item if isinstance(exc, ItemError) else label
            parsed.quarantined.append(quarantine(exc, source=path, item=item, stage="parse", raw=entry))
    return parsed


# --- OpenAI function calling ------------------------------------------------------------------


def _openai_tool(server_id: str) -> Callable[[Mapping[str, Any], str], Tool]:
    def parse(entry: Mapping[str, Any], item: str) -> Tool:
        if entry.get("type") == "function" or "function" in entry:
            entry = require_mapping(entry.get("function"), "function", item)
        return Tool(
            server_id=server_id,
            name=require_str(entry.get("name"), "function name", item).strip(),
            description=optional_str(entry.get("description"), "description", item),
            parameters=tuple(parameters_from_object_schema(entry.get("parameters"), item=item)),
            outputs=_openai_outputs(entry, item),
        )

    return parse


# Where function documents declare what a call returns: BFCL's ``response``, some catalogs' ``returns``,
# MCP's ``outputSchema`` copied over.
_OPENAI_OUTPUT_KEYS = ("response", "returns", "outputSchema", "output_schema")


def _openai_outputs(entry: Mapping[str, Any], item: str) -> tuple[OutputField, ...]:
    """The declared result of a function document; one that cannot be read costs its outputs, not the tool."""
    for key in _OPENAI_OUTPUT_KEYS:
        schema = entry.get(key)
        if isinstance(schema, Mapping):
            try:
                return tuple(outputs_from_schema(schema, item=item, resolve=local_refs(schema)))
            except ItemError:
                return ()
    return ()


def parse_openai(path: str, document: Any, server: str | None, limits: Limits | None = None) -> ParsedServers:
    """OpenAI tools: ``[{"type": "function", "function": {...}}]``, bare functions, or one of them."""
    wrapper: Mapping[str, Any] = document if isinstance(document, Mapping) and "tools" in document else {}
    entries = wrapper.get("tools") if wrapper else (document if isinstance(document, list) else [document])
    named = server or wrapper.get("server") or wrapper.get("name")
    limits = limits or Limits()
    server_id = server_id_from(named if isinstance(named, str) and named.strip() else Path(path).stem)
    notices: list[Notice] = []
    tools, quarantined = collect_tools(path, server_id, entries, _openai_tool(server_id), limits, notices)
    description = wrapper.get("description")
    result = Server(
        id=server_id,
        name=server_id,
        description=description[: limits.max_description_chars].strip() if isinstance(description, str) else "",
        tools=tuple(tools),
    )
    return ParsedServers([result], quarantined, notices)


# --- ToolLinkOS -------------------------------------------------------------------------------


def _toollinkos_parameter(raw: Any, item: str) -> Parameter:
    raw = require_mapping(raw, "parameter", item)
    name = require_str(raw.get("name"), "parameter name", item).strip()
    required = raw.get("required", False)
    if not isinstance(required, bool):
        raise ItemError(item, f"parameter {name!r}: required must be true or false, got {required!r}")
    schema = {k: v for k, v in raw.items() if k in ("type", "enum", "default", "description")}
    return parameter_from_schema(name, schema, required=required, item=item)


def _toollinkos_dependency(raw: Any, item: str) -> DeclaredDependency:
    raw = require_mapping(raw, "depends_on entry", item)
    target = require_str(raw.get("name"), "depends_on name", item).strip()
    kind_name = require_str(raw.get("dependence_type", "DEPENDS_ON"), "dependence_type", item).strip().upper()
    if kind_name not in DEPENDENCE_KINDS:
        raise ItemError(item, f"unknown dependence_type {kind_name!r} (expected one of {', '.join(DEPENDENCE_KINDS)})")
    parameter = raw.get("parameter_name")
    if parameter is not None and not isinstance(parameter, str):
        raise ItemError(item, f"parameter_name must be a string, got {type(parameter).__name__}")
    return DeclaredDependency(
        target=target,
        kind=DEPENDENCE_KINDS[kind_name],
        parameter=parameter.strip() or None if parameter else None,
        reason=optional_str(raw.get("reason"), "reason", item),
    )


def _toollinkos_tool(server_id: str) -> Callable[[Mapping[str, Any], str], Tool]:
    def parse(entry: Mapping[str, Any], item: str) -> Tool:
        parameters = entry.get("parameters")
        dependencies = entry.get("depends_on")
        parameters = [] if parameters is None else parameters
        dependencies = [] if dependencies is None else dependencies
        if not isinstance(parameters, list):
            raise ItemError(item, f"parameters must be a list, got {type(parameters).__name__}")
        if not isinstance(dependencies, list):
            raise ItemError(item, f"depends_on must be a list, got {type(dependencies).__name__}")
        func_type = entry.get("func_type")
        return Tool(
            server_id=server_id,
            name=require_str(entry.get("name"), "tool name", item).strip(),
            description=optional_str(entry.get("description"), "description", item),
            parameters=tuple(_toollinkos_parameter(p, item) for p in parameters),
            depends_on=tuple(_toollinkos_dependency(d, item) for d in dependencies),
            function_type=func_type if isinstance(func_type, str) else None,
        )

    return parse


def parse_toollinkos(path: str, document: Any, server: str | None, limits: Limits | None = None) -> ParsedServers:
    """A ToolLinkOS tool list; dependencies name tools that may live in other files."""
    if not isinstance(document, list):
        raise ManifestError(path, "a ToolLinkOS manifest must be a JSON list of tools")
    server_id = server_id_from(server or Path(path).stem)
    notices: list[Notice] = []
    tools, quarantined = collect_tools(
        path, server_id, document, _toollinkos_tool(server_id), limits or Limits(), notices
    )
    return ParsedServers([Server(id=server_id, name=server_id, tools=tuple(tools))], quarantined, notices)
