"""OpenAPI as other tools read it: the laxities of real descriptions, each read with a notice.

Public descriptions write booleans as text (``"required": "true"``), leave a property unnamed (``""``),
point a ``$ref`` into another file, at nothing or round in a circle, index lists and percent-encode braces
in their JSON pointers, and keep Swagger 2 habits (``#/definitions/...``). Swagger UI, openapi-generator and
Redocly read all of that, so toolkg does too, and says what it read how: one note per laxity, which the
build summary lists as a notice. What a laxity costs is the one part it is in (a schema part reads as
'any', a parameter or a keyword is dropped), never the operation.

``Lenient`` is the resolver ``schema.py`` calls on every schema part it reads: it follows the part's
``$ref``s and returns a cleaned copy that ``schema.py``'s strict checks (the same ones MCP and OpenAI
schemas go through) accept.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import unquote

from toolkg.extractors.manifests.schema import to_json_text

# Keywords whose value is a boolean in OpenAPI 3.0 schemas; descriptions write them as "true"/"false" too.
SCHEMA_BOOLEAN_KEYS = ("nullable", "readOnly", "writeOnly", "deprecated", "uniqueItems")
# Booleans in 3.0 and numbers in 3.1, or a schema: only their boolean text is read as a boolean.
SCHEMA_BOOLEAN_TEXT_KEYS = ("exclusiveMinimum", "exclusiveMaximum", "additionalProperties")
PARAMETER_BOOLEAN_KEYS = ("deprecated", "allowEmptyValue", "explode", "allowReserved")
# Where Swagger 2 kept what OpenAPI 3 keeps under components; converted descriptions still point there.
_SWAGGER2_LOCATIONS = (
    ("/definitions/", "/components/schemas/"),
    ("/parameters/", "/components/parameters/"),
    ("/responses/", "/components/responses/"),
)
_MISSING = object()
_SHOWN_CHAIN = 6  # refs of a cycle shown in its note
MAX_ALL_OF_DEPTH = 8  # allOf inside an allOf part...: deeper adds nothing
MAX_ALL_OF_PARTS = 256  # allOf parts merged into one schema, at all levels


class Notes:
    """What was read leniently for one operation (or path item): each note once, in the order met."""

    def __init__(self) -> None:
        self._notes: dict[str, None] = {}

    def add(self, where: str, what: str) -> None:
        self._notes.setdefault(f"{where}: {what}" if where else what, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._notes)

    def __len__(self) -> int:
        return len(self._notes)


def shown(value: Any, limit: int = 80) -> str:
    """``value`` as a note shows it: its repr (quotes and escapes keep the note one line), cut to ``limit``."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return "null" if value is None else f"a {type(value).__name__}"


def boolean_text(value: Any) -> bool | None:
    """``True``/``False`` for "true"/"false" text in any case with any surrounding spaces, else ``None``."""
    if isinstance(value, str):
        return {"true": True, "false": False}.get(value.strip().lower())
    return None


def boolean_field(node: Mapping[str, Any], key: str, where: str, notes: Notes, default: bool | None = None) -> Any:
    """A boolean field of an OpenAPI object: a boolean as is, boolean text read with a note, anything
    else noted and ignored (``default``); ``default`` when absent or null."""
    value = node.get(key)
    if value is None or isinstance(value, bool):
        return default if value is None else value
    parsed = boolean_text(value)
    if parsed is None:
        notes.add(where, f"{key} {shown(value)} is not a boolean: ignored")
        return default
    notes.add(where, f"{key} {shown(value)} read as {str(parsed).lower()}")
    return parsed


def text_field(node: Mapping[str, Any], key: str, where: str, notes: Notes) -> str:
    """A free-text field: text stripped, a number read as its digits, anything else noted and ignored."""
    value = node.get(key)
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int | float) and not isinstance(value, bool):
        notes.add(where, f"{key} is a number, not text: read as {shown(str(value))}")
        return str(value)
    notes.add(where, f"{key} is {kind_of(value)}, not text: ignored")
    return ""


class Unresolved(Exception):
    """A ``$ref`` that cannot be followed; the message says why, for a note."""


class Refs:
    """Follows ``$ref``s within one document as other tools do: JSON pointers (RFC 6901) into objects
    and lists, percent-encoded or not, and Swagger 2 locations moved under components."""

    def __init__(self, document: Any) -> None:
        self.document = document
        # A Swagger 2.0 document: its own ways (in: body, type on a parameter, schema on a response) are no laxity.
        self.swagger2 = isinstance(document, Mapping) and "swagger" in document and "openapi" not in document

    def follow(self, node: Any, where: str, notes: Notes, instead: str) -> Any:
        """``node`` with its chain of ``$ref``s followed; ``None`` (and a note ending in ``instead``)
        when a reference points nowhere, into another document, or round in a circle."""
        chain: list[str] = []
        while isinstance(node, Mapping) and "$ref" in node:
            ref = node["$ref"]
            if not isinstance(ref, str):
                notes.add(where, f"$ref {shown(ref)} is not text: ignored")
                return {key: value for key, value in node.items() if key != "$ref"}
            if ref in chain:
                loop = [*chain, ref]
                if len(loop) > _SHOWN_CHAIN:
                    loop = [*loop[: _SHOWN_CHAIN - 1], "...", ref]
                notes.add(where, f"$ref cycle {' -> '.join(_plain(r) for r in loop)}: {instead}")
                return None
            chain.append(ref)
            try:
                node = self.target(ref, where, notes)
            except Unresolved as exc:
                notes.add(where, f"$ref {shown(ref)} {exc}: {instead}")
                return None
        return node

    def target(self, ref: str, where: str, notes: Notes) -> Any:
        if not ref.startswith("#"):
            raise Unresolved("points into another document, which is not read")
        fragment = ref[1:]
        for candidate in dict.fromkeys((fragment, unquote(fragment))):
            found = self._walk(candidate)
            if found is not _MISSING:
                return found
        for old, new in _SWAGGER2_LOCATIONS:
            if fragment.startswith(old):
                moved = new + fragment[len(old) :]
                found = self._walk(unquote(moved))
                if found is not _MISSING:
                    notes.add(where, f"$ref {shown(ref)} is Swagger 2: read as {shown('#' + moved)}")
                    return found
        raise Unresolved("points nowhere")

    def _walk(self, pointer: str) -> Any:
        if not pointer:
            return self.document
        if not pointer.startswith("/"):
            return _MISSING  # '#Pet' names an anchor, which 3.0 does not have
        node: Any = self.document
        for part in pointer[1:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            index = int(part) if part.isascii() and part.isdigit() and len(part) < 10 else None
            if isinstance(node, Mapping):
                if part in node:
                    node = node[part]
                elif index is not None and index in node:  # YAML reads a response code 200: as a number
                    node = node[index]
                else:
                    return _MISSING
            elif isinstance(node, list) and index is not None and index < len(node):
                node = node[index]
            else:
                return _MISSING
        return node


def _plain(ref: str) -> str:
    return ref if ref.isprintable() and len(ref) <= 200 else shown(ref)


class Lenient:
    """The resolver ``schema.py`` calls with each schema part it reads (and what the part is, for the
    notes): the part's ``$ref``s followed, then a cleaned copy; an unreadable part reads as 'any'."""

    def __init__(self, refs: Refs, notes: Notes) -> None:
        self.refs = refs
        self.notes = notes

    def __call__(self, node: Any, what: str = "schema") -> Mapping[str, Any]:
        schema = clean_schema(self.refs.follow(node, what, self.notes, "read as any"), what, self.notes)
        return self._merged(schema, what, 0, [MAX_ALL_OF_PARTS]) if isinstance(schema.get("allOf"), list) else schema

    def follow(self, node: Any, where: str, instead: str) -> Any:
        return self.refs.follow(node, where, self.notes, instead)

    def _merged(self, schema: Mapping[str, Any], what: str, depth: int, budget: list[int]) -> Mapping[str, Any]:
        """``schema`` with the properties and ``required`` of its ``allOf`` parts (followed, and theirs in
        turn) merged in, as openapi-generator and Redocly merge them: the schema's own come first, a part's
        type 'object' is kept when the schema states none. Parts past ``MAX_ALL_OF_DEPTH`` levels (round a
        ``$ref`` cycle, say) or past ``MAX_ALL_OF_PARTS`` in all (``budget``, shared down the levels, bounds
        the work a fan of allOfs can cost) add nothing, with a note."""
        merged = dict(schema)
        parts = merged.pop("allOf")
        properties: dict[str, Any] = dict(merged.get("properties") or {})
        required: list[str] = list(merged.get("required") or [])
        types: list[str] = []
        for part in parts:
            if budget[0] <= 0 or depth >= MAX_ALL_OF_DEPTH:
                self.notes.add(
                    what,
                    f"allOf nested deeper than {MAX_ALL_OF_DEPTH} levels or past {MAX_ALL_OF_PARTS} "
                    "parts: the rest not merged",
                )
                break
            budget[0] -= 1
            part = clean_schema(self.refs.follow(part, what, self.notes, "read as any"), what, self.notes)
            if isinstance(part.get("allOf"), list):
                part = self._merged(part, what, depth + 1, budget)
            for name, value in (part.get("properties") or {}).items():
                properties.setdefault(name, value)
            required += [name for name in part.get("required") or () if name not in required]
            if isinstance(part.get("type"), str):
                types.append(part["type"])
            for key in ("description", "items", "enum", "anyOf", "oneOf", "additionalProperties"):
                if key in part and key not in merged:
                    merged[key] = part[key]
        if properties:
            merged["properties"] = properties
            merged.setdefault("type", "object")
        elif "type" not in merged and len(set(types)) == 1:
            merged["type"] = types[0]  # allOf: [{$ref: Id}, {description: ...}] is the one type of its parts
        if required:
            merged["required"] = required
        return merged


def clean_schema(node: Any, where: str, notes: Notes) -> Mapping[str, Any]:
    """A copy of schema ``node`` that ``schema.py`` reads without an error, each change noted.

    Only the keywords toolkg reads are checked (type, enum, default, description, properties, required,
    items, anyOf/oneOf/allOf) plus the boolean ones other tools read; any other keyword is left as is."""
    if node is None:
        return {}
    if not isinstance(node, Mapping):
        notes.add(where, f"schema is {kind_of(node)}, not an object: read as any")
        return {}
    schema = dict(node)
    _clean_type(schema, where, notes)
    _clean_values(schema, where, notes)
    if "description" in schema:
        schema["description"] = text_field(schema, "description", where, notes)
    _clean_properties(schema, where, notes)
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key) is not None and not isinstance(schema[key], list):
            notes.add(where, f"{key} is {kind_of(schema[key])}, not a list: ignored")
            del schema[key]
    items = schema.get("items")
    if items is not None and not isinstance(items, Mapping | list):
        notes.add(where, f"items is {kind_of(items)}, not a schema: ignored")
        del schema["items"]
    for key in SCHEMA_BOOLEAN_KEYS:
        if schema.get(key) is not None and not isinstance(schema[key], bool):
            schema[key] = boolean_field(schema, key, where, notes)
    for key in SCHEMA_BOOLEAN_TEXT_KEYS:
        if isinstance(schema.get(key), str) and boolean_text(schema[key]) is not None:
            schema[key] = boolean_field(schema, key, where, notes)
    return schema


def _clean_type(schema: dict[str, Any], where: str, notes: Notes) -> None:
    raw = schema.get("type")
    if raw is None or (isinstance(raw, str) and raw.strip()):
        return
    if isinstance(raw, list) and raw and all(isinstance(t, str) and t.strip() for t in raw):
        return  # a list of types: 3.1's way, read in 3.0 documents too
    kept = [t for t in raw if isinstance(t, str) and t.strip()] if isinstance(raw, list) else []
    if kept:
        notes.add(where, f"type {shown(raw)} holds values that are not type names: read as {shown(kept)}")
        schema["type"] = kept
    else:
        notes.add(where, f"type {shown(raw)} is not a type name: ignored")
        del schema["type"]


def _json_value(value: Any) -> bool:
    try:
        to_json_text(value)
    except ValueError:
        return False
    return True


def _clean_values(schema: dict[str, Any], where: str, notes: Notes) -> None:
    """enum a list of JSON values, default a JSON value (YAML's .nan is neither)."""
    enum = schema.get("enum")
    if enum is not None:
        if not isinstance(enum, list):
            notes.add(where, f"enum {shown(enum)} is not a list: ignored")
            del schema["enum"]
        elif not all(_json_value(v) for v in enum):
            notes.add(where, "enum values JSON cannot hold (NaN, Infinity) dropped")
            schema["enum"] = [v for v in enum if _json_value(v)]
    if "default" in schema and not _json_value(schema["default"]):
        notes.add(where, f"default {shown(schema['default'])} is no JSON value: ignored")
        del schema["default"]


def _clean_properties(schema: dict[str, Any], where: str, notes: Notes) -> None:
    """Properties keyed by names a client can send, and ``required`` the list of them it should be."""
    properties = schema.get("properties")
    required = schema.get("required")
    if properties is not None and not isinstance(properties, Mapping):
        notes.add(where, f"properties is {kind_of(properties)}, not an object: ignored")
        del schema["properties"]
        properties = None
    names: list[str] = []
    if isinstance(required, list):
        for name in required:
            if isinstance(name, str):
                names.append(name)
            else:
                notes.add(where, f"required lists {shown(name)}, not a property name: ignored")
    elif required is not None:
        single = isinstance(required, str) and boolean_text(required) is None
        if single:
            notes.add(where, f"required {shown(required)} is not a list: read as {shown([required])}")
            names.append(required)
        elif properties is not None:  # on a property, required: true is draft 3's way, which its object reads
            notes.add(where, f"required {shown(required)} on an object schema is not a list of names: ignored")
    if properties is not None:
        cleaned: dict[str, Any] = {}
        for name, value in properties.items():
            if isinstance(name, bool | int | float):  # YAML reads 200:, on: and yes: as numbers and booleans
                text = str(name).lower() if isinstance(name, bool) else str(name)
                notes.add(where, f"property {shown(name)} is {kind_of(name)}, not text: read as {shown(text)}")
                name = text
            if not isinstance(name, str) or not name.strip():
                notes.add(where, f"property {shown(name)} dropped: a property needs a name")
                continue
            cleaned.setdefault(name, value)
            said = value.get("required") if isinstance(value, Mapping) else None
            if (said is True or boolean_text(said) is True) and name not in names:
                notes.add(where, f"property {shown(name)} says required: true (JSON Schema draft 3): read as required")
                names.append(name)
        schema["properties"] = cleaned
    if required is not None or names:
        schema["required"] = [name for name in names if name.strip()]
