"""JSON Schema fragments (MCP inputSchema, OpenAI parameters, OpenAPI schemas) to typed fields.

Shared by every manifest parser so a parameter means the same thing whatever format it
came from. Wrong shapes raise ``ItemError`` with a message naming the offending field.

Each schema part read goes through a *resolver* first, told what the part is (``"parameter 'city'"``,
``"output schema"``): for MCP and OpenAI the part as it is; for OpenAPI ``laxities.Lenient``, which follows
``$ref``s and hands back a copy cleaned of the laxities real descriptions have, so these strict checks
pass and one bad part costs only itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from toolkg.errors import ItemError
from toolkg.models import OutputField, Parameter, ParameterLocation

# Spellings catalogs use for JSON Schema types (ToolLinkOS writes Python names).
_TYPE_ALIASES = {
    "str": "string",
    "text": "string",
    "int": "integer",
    "float": "number",
    "double": "number",
    "bool": "boolean",
    "list": "array",
    "dict": "object",
    "none": "null",
}

Resolver = Callable[[Any, str], Any]  # (schema part, what it is) -> the part to read


def _identity(value: Any, what: str = "schema") -> Any:
    return value


MAX_SCHEMA_NAME = 200  # characters of a component's name kept


def ref_name(raw: Any, resolved: Any = None) -> str | None:
    """The schema component a ``$ref`` names for a value (``#/components/schemas/order-summary-object`` ->
    ``order-summary-object``; an ``allOf`` of one reference and local additions counts), else for the items of
    the array it is (``resolved``: the schema as read, whose ``items`` are still unresolved). Read before the
    resolver follows the reference: the resolved copy no longer says which component it was."""
    own = _named(raw)
    if own is not None:
        return own
    node = resolved if isinstance(resolved, Mapping) else raw
    return _named(node.get("items")) if isinstance(node, Mapping) else None


def _named(node: Any) -> str | None:
    if not isinstance(node, Mapping):
        return None
    ref = node.get("$ref")
    parts = node.get("allOf")
    if not isinstance(ref, str) and isinstance(parts, list):
        named = [p["$ref"] for p in parts if isinstance(p, Mapping) and isinstance(p.get("$ref"), str)]
        ref = named[0] if len(named) == 1 else None
    return _component(ref) if isinstance(ref, str) else None


def _component(ref: str) -> str | None:
    from urllib.parse import unquote

    name = unquote(ref.rpartition("#")[2].rstrip("/").rpartition("/")[2]).replace("~1", "/").replace("~0", "~")
    name = " ".join(name.split())[:MAX_SCHEMA_NAME]
    return name or None


def to_json_text(value: Any) -> str:
    """Canonical JSON text (sorted keys, no spaces) for values kept verbatim.

    YAML's dates become ISO text, its sets sorted lists and its binary base64; what JSON cannot
    hold (NaN, Infinity, a number past Python's digit limit, keys of mixed types) raises
    ``ValueError`` with a one-line message.

    >>> import datetime
    >>> to_json_text({"b": datetime.date(2024, 1, 2), "a": [1.5, None]})
    '{"a":[1.5,null],"b":"2024-01-02"}'
    >>> to_json_text(float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: NaN and Infinity are not JSON values
    """
    try:
        return json.dumps(
            value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False, default=_json_default
        )
    except RecursionError:
        raise ValueError("nested too deeply to write as JSON") from None
    except TypeError as exc:
        raise ValueError(f"not a JSON value: {exc}") from None
    except ValueError as exc:
        if "float" in str(exc):
            raise ValueError("NaN and Infinity are not JSON values") from None
        if "digits" in str(exc):
            raise ValueError("a number has more than 4300 digits") from None
        raise


def _json_default(value: Any) -> Any:
    import base64
    import datetime

    if isinstance(value, datetime.date | datetime.datetime | datetime.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    raise TypeError(f"a {type(value).__name__} is not a JSON value")


def json_text(value: Any, what: str, item: str) -> str:
    """``to_json_text`` with its failure as an ``ItemError`` naming ``what``."""
    try:
        return to_json_text(value)
    except ValueError as exc:
        raise ItemError(item, f"{what}: {exc}") from None


def require_str(value: Any, what: str, item: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise ItemError(item, f"{what} must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise ItemError(item, f"{what} is empty")
    return value


def optional_str(value: Any, what: str, item: str) -> str:
    """A free-text field that may be absent or null; other types are an error."""
    if value is None:
        return ""
    return require_str(value, what, item, allow_empty=True).strip()


def require_mapping(value: Any, what: str, item: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ItemError(item, f"{what} must be an object, got {type(value).__name__}")
    return value


MAX_ALTERNATIVE_DEPTH = 8  # anyOf inside anyOf...: deeper (or a $ref cycle through them) reads as 'any'


def json_type(schema: Mapping[str, Any], resolve: Resolver = _identity, _depth: int = 0, what: str = "schema") -> str:
    """The JSON type of a schema; 'any' when unstated, alternatives joined by '|'."""
    raw = schema.get("type")
    if raw is None:
        if _depth >= MAX_ALTERNATIVE_DEPTH:
            return "any"
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list):
                types = []
                for option in options:
                    if isinstance(option, Mapping):
                        resolved = resolve(option, what)
                        found = (
                            json_type(resolved, resolve, _depth + 1, what) if isinstance(resolved, Mapping) else "any"
                        )
                        if found not in types and found not in ("null", "any"):
                            types.append(found)
                return "|".join(types) or "any"
        if "properties" in schema:
            return "object"
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return _python_json_type(schema["enum"][0])
        return "any"
    names = raw if isinstance(raw, list) else [raw]
    normalised = []
    for name in names:
        if not isinstance(name, str):
            raise ValueError(f"type must be a string or a list of strings, got {type(name).__name__}")
        canonical = _TYPE_ALIASES.get(name.strip().lower(), name.strip().lower())
        if canonical != "null" and canonical not in normalised:
            normalised.append(canonical)
    return "|".join(normalised) or "null"


def _python_json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "any"


def parameter_from_schema(
    name: str,
    schema: Any,
    *,
    required: bool,
    item: str,
    location: ParameterLocation = "argument",
    resolve: Resolver = _identity,
    description: str | None = None,
) -> Parameter:
    """One parameter from its JSON Schema (``properties[name]``)."""
    what = f"parameter {name!r}"
    raw = schema
    schema = require_mapping(resolve(schema, what), what, item)
    try:
        kind = json_type(schema, resolve, what=what)
    except ValueError as exc:
        raise ItemError(item, f"{what}: {exc}") from None
    text = (
        description if description is not None else optional_str(schema.get("description"), f"{what} description", item)
    )
    enum = schema.get("enum")
    if enum is not None and not isinstance(enum, list):
        raise ItemError(item, f"{what}: enum must be a list, got {type(enum).__name__}")
    return Parameter(
        name=name,
        json_type=kind,
        description=text,
        required=required,
        enum=tuple(json_text(v, f"{what} enum value", item) for v in enum or ()),
        default=json_text(schema["default"], f"{what} default", item) if "default" in schema else None,
        location=location,
        nested=nested_schema(schema, resolve),
        schema_name=ref_name(raw, schema),
    )


# How much of an object parameter's inside is kept: levels below the parameter, and properties in all. Deeper or
# more is cut (an agent rarely needs it, and a stranger's schema must not make the store grow without bound).
NESTED_DEPTH = 4
MAX_NESTED_PROPERTIES = 64
MAX_NESTED_TEXT = 2000  # characters of a nested title or description (cut: the audit reads what is kept)
MAX_NESTED_ENUM = 64


def nested_schema(schema: Mapping[str, Any], resolve: Resolver = _identity) -> str | None:
    """The inside of an object parameter (its ``properties``, with ``required``) or of an array parameter (its
    ``items``), as compact JSON text holding what an agent is shown of each property: type, description, enum,
    default and its own inside. None for a flat parameter. Read leniently (a part that cannot be read is left
    out: the parameter itself was checked)."""
    room = [MAX_NESTED_PROPERTIES]
    inside = _inside(schema, resolve, 1, room)
    return to_json_text(inside) if inside else None


def _inside(schema: Mapping[str, Any], resolve: Resolver, depth: int, room: list[int]) -> dict[str, Any]:
    if depth > NESTED_DEPTH:
        return {}
    out: dict[str, Any] = {}
    items = schema.get("items")
    if isinstance(items, Mapping):
        item = _property(resolve(items, "items"), resolve, depth, room)
        if item and (set(item) - {"type"} or item.get("type") not in (None, "any")):
            out["items"] = item
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and properties:
        kept: dict[str, Any] = {}
        for name, prop in properties.items():
            if room[0] <= 0:
                break
            room[0] -= 1
            kept[str(name)] = _property(resolve(prop, f"property {name!r}"), resolve, depth, room)
        out["properties"] = kept
        required = schema.get("required")
        if isinstance(required, list) and (names := [r for r in required if isinstance(r, str) and r in kept]):
            out["required"] = names
    return out


def _property(schema: Any, resolve: Resolver, depth: int, room: list[int]) -> dict[str, Any]:
    if not isinstance(schema, Mapping):
        return {}
    out: dict[str, Any] = {}
    try:
        kind = json_type(schema, resolve)
    except ValueError:
        kind = "any"
    if kind != "any":
        out["type"] = kind
    for key in ("description", "title"):
        if isinstance(schema.get(key), str) and schema[key].strip():
            out[key] = schema[key].strip()[:MAX_NESTED_TEXT]
    if isinstance(schema.get("enum"), list):
        out["enum"] = list(schema["enum"])[:MAX_NESTED_ENUM]
    if "default" in schema:
        out["default"] = schema["default"]
    try:
        if len(to_json_text(out)) > 4 * MAX_NESTED_TEXT:  # a huge enum or default: left out, like one JSON cannot hold
            raise ValueError("too long")
    except ValueError:
        out.pop("enum", None), out.pop("default", None)
    out.update(_inside(schema, resolve, depth + 1, room))
    return out


def parameters_from_object_schema(
    schema: Any,
    *,
    item: str,
    location: ParameterLocation = "argument",
    resolve: Resolver = _identity,
    what: str = "input schema",
) -> list[Parameter]:
    """Parameters from an object schema: one per property, ``required`` from its list."""
    if schema is None:
        return []
    schema = require_mapping(resolve(schema, what), "input schema", item)
    properties = schema.get("properties") or {}
    properties = require_mapping(properties, "input schema properties", item)
    required = schema.get("required") or []
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise ItemError(item, "input schema 'required' must be a list of property names")
    return [
        parameter_from_schema(
            require_str(name, "parameter name", item),
            prop,
            required=name in required,
            item=item,
            location=location,
            resolve=resolve,
        )
        for name, prop in properties.items()
    ]


# Nested output fields read below the top level: how deep, and how many fields a tool keeps in all. A search
# result is usually an object holding an array of items (``{"places": [{"placeId": ...}]}``): the fields that
# carry what a tool yields sit one or two levels down.
OUTPUT_DEPTH = 3  # segments of a path: places[].location.lat
MAX_OUTPUT_FIELDS = 64


def local_refs(document: Any) -> Resolver:
    """A resolver of a self-contained schema's own ``$ref``s (``#/$defs/Reservation``, ``#/definitions/X``): what
    pydantic and FastMCP write into MCP output schemas and function documents. A reference it cannot follow
    stays as it is (read as 'any')."""

    def resolve(value: Any, what: str = "schema") -> Any:
        seen = 0
        while isinstance(value, Mapping) and isinstance(value.get("$ref"), str) and seen < MAX_ALTERNATIVE_DEPTH:
            ref, seen = value["$ref"], seen + 1
            if not ref.startswith("#/"):
                return value
            target: Any = document
            for part in ref[2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                target = target.get(part) if isinstance(target, Mapping) else None
            if not isinstance(target, Mapping):
                return value
            # the reference's own description (where it is used) says more than the definition's
            value = {**target, **{k: v for k, v in value.items() if k != "$ref"}}
        return value

    return resolve


def output_schema_name(schema: Any, resolve: Resolver = _identity) -> str | None:
    """The component a ``$ref`` names for a whole output, or for the items of an output that is an array (an
    operation that returns ``$ref: Pet``, or an array of them): what the tool yields, named by its author."""
    if not isinstance(schema, Mapping):
        return None
    resolved = resolve(schema, "output schema")
    return ref_name(schema, resolved if isinstance(resolved, Mapping) else None)


def outputs_from_schema(schema: Any, *, item: str, resolve: Resolver = _identity) -> list[OutputField]:
    """Output fields: properties of an object schema (or of an array's items), then their nested fields, each
    named by its path (``places[].placeId``, ``owner.login``, a wrapper's ``result.reservation_id``), breadth
    first; else one 'result'."""
    if schema is None:
        return []
    schema = require_mapping(resolve(schema, "output schema"), "output schema", item)
    if schema.get("type") == "array" and isinstance(schema.get("items"), Mapping):
        schema = require_mapping(resolve(schema["items"], "output schema items"), "output schema items", item)
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and properties:
        fields = []
        nested: list[tuple[str, Any]] = []
        for name, raw in properties.items():
            prop = require_mapping(resolve(raw, f"output {name!r}"), f"output {name!r}", item)
            try:
                kind = json_type(prop, resolve, what=f"output {name!r}")
            except ValueError as exc:
                raise ItemError(item, f"output {name!r}: {exc}") from None
            text = optional_str(prop.get("description"), f"output {name!r} description", item)
            fields.append(OutputField(name=name, json_type=kind, description=text, schema_name=ref_name(raw, prop)))
            nested.append((str(name), prop))
        return fields + _nested_outputs(nested, resolve, MAX_OUTPUT_FIELDS - len(fields))
    try:
        kind = json_type(schema, resolve, what="output schema")
    except ValueError as exc:
        raise ItemError(item, f"output schema: {exc}") from None
    if kind == "any" and not schema.get("description"):
        return []
    return [
        OutputField(
            name="result",
            json_type=kind,
            description=optional_str(schema.get("description"), "output description", item),
        )
    ]


def _nested_outputs(level: list[tuple[str, Any]], resolve: Resolver, room: int) -> list[OutputField]:
    """The fields below ``level`` ((path, schema) of the fields already read), breadth first, at most ``room``.
    Read leniently: a nested part that cannot be read is left out, never the tool (the top level was checked)."""
    out: list[OutputField] = []
    depth = 1
    while level and depth < OUTPUT_DEPTH and len(out) < room:
        depth += 1
        below: list[tuple[str, Any]] = []
        for path, schema in level:
            try:
                prefix, properties = _children(path, schema, resolve)
                for name, raw in properties:
                    if len(out) >= room:
                        return out
                    prop = resolve(raw, f"output {prefix}{name!r}")
                    if not isinstance(prop, Mapping):
                        continue
                    text = prop.get("description")
                    out.append(
                        OutputField(
                            name=f"{prefix}{name}",
                            json_type=json_type(prop, resolve, what=f"output {prefix}{name!r}"),
                            description=text if isinstance(text, str) else "",
                            schema_name=ref_name(raw, prop),
                        )
                    )
                    below.append((f"{prefix}{name}", prop))
            except (ValueError, ItemError, TypeError):
                continue
        level = below
    return out


def _children(path: str, schema: Mapping[str, Any], resolve: Resolver) -> tuple[str, list[tuple[str, Any]]]:
    """The path prefix and the properties of an object field, or of the objects an array field holds."""
    prefix = f"{path}."
    if schema.get("type") == "array" and isinstance(schema.get("items"), Mapping):
        schema = resolve(schema["items"], f"output {path!r} items")
        prefix = f"{path}[]."
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return prefix, []
    return prefix, [(str(name), prop) for name, prop in properties.items()]
