"""Hypothesis strategies for hostile catalogs: manifests in all five formats, each tool good or bad.

A generated ``Catalog`` is a set of files plus what a build must make of them: every *good*
tool loaded with its parameters, every *bad* one quarantined. Names come from every Unicode
category (lone surrogates, RTL marks, emoji, IRI-breaking characters, digits only, 1 and 10,000
characters); schemas nest deep, cycle through ``$ref`` or have the wrong types; descriptions are
empty, in other scripts or very long. Each bad tool is bad for exactly one stated reason.

What makes a tool good or bad is the documented contract (README, "Limits" and "Bad input"):
a name must be a string, non-empty once stripped, free of control characters and line breaks
and at most ``max_name_chars`` long; the same stripped name twice in a server is a duplicate; a
tool nested deeper than ``max_depth`` is refused; values JSON cannot hold (NaN) are refused. OpenAPI
descriptions are read as other OpenAPI tools read them: ``OPENAPI_READS`` lists the flaws that cost them
only the part they are in, and a duplicate operationId names the later operation after its route.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from toolkg.extractors.manifests.formats import server_id_from
from toolkg.limits import Limits

LIMITS = Limits()
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
FORMATS = ("mcp", "mcp-catalog", "openai", "openapi", "toollinkos")

# Characters people do not expect in names, and every general category Unicode has.
_TRICKY = list("<>\"{}|\\^`#?%&/:;= '") + ["::", "\u202e", "\u200f", "\u200b", "\ufeff", "😀", "👩‍💻", "é", "é"]
_any_char = st.characters(codec=None, categories=None)  # all categories, surrogates (Cs) included
_words = st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=12)


@st.composite
def hostile_text(draw, min_size: int = 0, max_size: int = 40) -> str:
    """Text from every Unicode category, with tricky pieces spliced in."""
    parts = draw(
        st.lists(
            st.one_of(st.text(alphabet=_any_char, max_size=8), st.sampled_from(_TRICKY), _words),
            min_size=0,
            max_size=6,
        )
    )
    text = "".join(parts)
    while len(text) < min_size:
        text += "x"
    return text[:max_size]


def stored_form(text: str) -> str:
    """How a string reads back from the store: lone surrogates become U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def name_is_good(name: Any) -> bool:
    if not isinstance(name, str):
        return False
    stripped = name.strip()
    return bool(stripped) and not _CONTROL.search(stripped) and len(stripped) <= LIMITS.max_name_chars


@st.composite
def tool_names(draw) -> Any:
    """A name that may be good or bad: hostile text, digits only, 1 or 10,000 characters, a control
    character, whitespace only, or not a string at all."""
    return draw(
        st.one_of(
            hostile_text(min_size=1),
            st.from_regex(r"\A[0-9]{1,6}\Z"),
            st.sampled_from(["x", "get_2024", "a  b", " padded ", "get::tool", "%41", "é", "é", "\u202eevil"]),
            st.just("n" * 10_000),
            hostile_text(min_size=1).map(lambda t: t + "\t" + t),
            st.sampled_from(["", "   ", "\n", "\x1b[2J"]),
            st.sampled_from([None, 5, ["list"], {"o": 1}]),
        )
    )


@dataclass
class ToolSpec:
    """One tool as generated, and whether (and why) a build must refuse it."""

    name: Any
    description: Any
    parameters: dict[str, dict]  # parameter name -> JSON schema
    required: list[str]
    bad: str = ""  # why the tool must be quarantined ('' for a good tool)
    index: int = 0
    read_as: str = ""  # the name a build gives it when not its own (an OpenAPI duplicate is named after its route)

    @property
    def stored_name(self) -> str:
        return stored_form((self.read_as or self.name).strip())


def _nested(levels: int) -> dict:
    node: dict = {"type": "string"}
    for _ in range(levels):
        node = {"type": "object", "properties": {"x": node}}
    return node


# Parameter schemas: fine ones, and one broken way each (the tool is then bad).
_fine_schemas = st.one_of(
    st.just({"type": "string"}),
    st.builds(lambda d: {"type": "integer", "description": d}, hostile_text(max_size=60)),
    st.builds(lambda n: {"type": "string", "enum": [f"v{i}" for i in range(n)]}, st.integers(1, 1200)),
    st.integers(0, 10).map(lambda levels: _nested(levels)),
    st.just({"anyOf": [{"type": "string"}, {"type": "null"}]}),
    st.just({"$ref": "#/components/schemas/Loop"}),  # a $ref cycle (OpenAPI resolves it; others ignore $ref)
    st.just({"type": ["string", "null"], "default": None}),
)


_BROKEN_SCHEMAS = {
    "schema is not an object": st.just(5),
    "nested past the depth limit": st.integers(LIMITS.max_depth, 3 * LIMITS.max_depth).map(_nested),
    "enum is not a list": st.just({"type": "string", "enum": "abc"}),
    "default is NaN": st.just({"type": "number", "default": float("nan")}),
    "type is not a string": st.just({"type": 5}),
}


@st.composite
def tool_specs(draw, index: int) -> ToolSpec:
    name = draw(tool_names())
    description = draw(
        st.one_of(
            hostile_text(max_size=200),
            st.sampled_from(["", "获取天气预报", "Получить погоду", "الطقس", "  "]),
            st.integers(1, 3).map(lambda k: "word " * (k * 30_000)),  # past the description limit: trimmed
        )
    )
    names = draw(
        st.lists(hostile_text(min_size=1, max_size=30), max_size=4, unique_by=lambda n: stored_form(n.strip()))
    )
    parameters = {n: draw(_fine_schemas) for n in names if name_is_good(n)}
    required = [n for n in parameters if draw(st.booleans())]
    spec = ToolSpec(name=name, description=description, parameters=parameters, required=required, index=index)
    if not name_is_good(name):
        spec.bad = "bad name"
        return spec
    flaw = draw(st.sampled_from(["none"] * 6 + ["description type", "bad parameter name", *_BROKEN_SCHEMAS]))
    if flaw == "description type":
        spec.description, spec.bad = 12345, flaw
    elif flaw == "bad parameter name":
        spec.parameters = {**parameters, "p\nq": {"type": "string"}}
        spec.bad = flaw
    elif flaw in _BROKEN_SCHEMAS:
        spec.parameters = {**parameters, "broken": draw(_BROKEN_SCHEMAS[flaw])}
        spec.bad = flaw
    return spec


def _good(index: int) -> ToolSpec:
    return ToolSpec(
        f"plain_tool_{index}",
        "Gets the current weather for a city.",
        {"city": {"type": "string"}},
        ["city"],
        index=index,
    )


@dataclass
class ManifestSpec:
    format: str
    server: str  # the server id a build gives it
    tools: list[ToolSpec]
    file: str = ""
    title: Any = ""  # a hostile server name / API title / catalog entry name


@dataclass
class Catalog:
    manifests: list[ManifestSpec] = field(default_factory=list)

    def good_tools(self) -> dict[str, set[str]]:
        """'server::tool' -> parameter names, for every tool a build must load (ToolLinkOS strips
        parameter names; the JSON Schema formats keep a property's key exactly)."""
        out = {}
        for m in self.manifests:
            for t in m.tools:
                if not t.bad:
                    strip = m.format == "toollinkos"
                    out[f"{m.server}::{t.stored_name}"] = {stored_form(p.strip() if strip else p) for p in t.parameters}
        return out

    def bad_tools(self) -> list[tuple[ManifestSpec, ToolSpec]]:
        return [(m, t) for m in self.manifests for t in m.tools if t.bad]


def _mark_duplicates(tools: list[ToolSpec]) -> None:
    seen: set[str] = set()
    for t in tools:
        if t.bad:
            continue
        key = stored_form(t.name.strip())
        if key in seen:
            t.bad = "duplicate name"
        seen.add(key)


@st.composite
def catalogs(draw, max_files: int = 4) -> Catalog:
    catalog = Catalog()
    for number in range(draw(st.integers(1, max_files))):
        fmt = draw(st.sampled_from(FORMATS))
        count = draw(st.integers(0, 5))
        tools = [draw(tool_specs(i)) for i in range(count)]
        if fmt == "openapi":  # an operation without a usable operationId is named after its route
            for t in tools:
                if not (isinstance(t.name, str) and t.name.strip()):
                    t.name, t.bad = f"get_r{t.index}", ""
        tools.append(_good(count))  # mixed: every file holds a plain good tool too
        _mark_duplicates(tools)
        stem = f"m{number}"
        title = draw(hostile_text(min_size=1, max_size=60))
        server = {
            "mcp": server_id_from(f"{stem}-{title}"),
            "mcp-catalog": f"srv{number}",
            "openai": stem,
            "openapi": server_id_from(f"{stem}-{title}"),
            "toollinkos": stem,
        }[fmt]
        catalog.manifests.append(ManifestSpec(fmt, server, tools, title=title))
    return catalog


# --- writing the files --------------------------------------------------------------------------


def _input_schema(t: ToolSpec) -> dict:
    return {"type": "object", "properties": t.parameters, "required": t.required}


def document(m: ManifestSpec, stem: str) -> Any:
    if m.format == "mcp":
        tools = [{"name": t.name, "description": t.description, "inputSchema": _input_schema(t)} for t in m.tools]
        return {"server_name": f"{stem}-{m.title}", "tools": tools}
    if m.format == "mcp-catalog":
        tools = [{"name": t.name, "description": t.description, "inputSchema": _input_schema(t)} for t in m.tools]
        return [
            {
                "name": m.title,
                "description": "a catalog entry",
                "category": m.title,
                "tools": {m.server: {"tools": tools}},
            }
        ]
    if m.format == "openai":
        return [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": _input_schema(t)},
            }
            for t in m.tools
        ]
    if m.format == "toollinkos":
        return [
            {
                "name": t.name,
                "description": t.description,
                "parameters": [
                    {"name": n, "required": n in t.required, **s} if isinstance(s, dict) else s
                    for n, s in t.parameters.items()
                ],
                "func_type": "regular",
                "depends_on": [],
            }
            for t in m.tools
        ]
    paths = {}
    for t in m.tools:  # openapi: one route per tool; parameters in the query, a $ref cycle for one
        operation = {
            "operationId": t.name,
            "summary": t.description,
            "parameters": [
                {"name": n, "in": "query", "required": n in t.required, "schema": s} for n, s in t.parameters.items()
            ],
        }
        paths[f"/r{t.index}"] = {"get": operation}
    return {
        "openapi": "3.0.3",
        "info": {"title": f"{stem}-{m.title}", "version": "1"},
        "paths": paths,
        "components": {"schemas": {"Loop": {"anyOf": [{"$ref": "#/components/schemas/Loop"}]}}},
    }


# Flaws an OpenAPI description is read despite, as other OpenAPI tools read it: each costs the one schema
# part or text field it is in, with a notice (extractors/manifests/laxities.py).
OPENAPI_READS = {
    "description type",
    "schema is not an object",
    "enum is not a list",
    "default is NaN",
    "nan",  # tests/integration/test_hostile_manifests.py's name for it
    "type is not a string",
}


def _as_openapi_reads(tools: list[ToolSpec]) -> None:
    """What an OpenAPI build makes of ``tools``: the flaws it reads are no longer bad, and a duplicate
    operationId names the later operation after its route (still a duplicate if that name is taken)."""
    taken: set[str] = set()
    for t in tools:
        if t.bad in OPENAPI_READS or t.bad == "duplicate name":
            t.bad = ""
        if t.bad:
            continue
        if t.stored_name in taken:
            t.read_as = f"get_r{t.index}"
            if t.stored_name in taken:
                t.read_as, t.bad = "", "duplicate name"
                continue
        taken.add(t.stored_name)


def write(catalog: Catalog, folder: Path, yaml_for_openapi: bool = True) -> None:
    """Write each manifest of ``catalog`` into ``folder``, settling what a build must make of its tools."""
    folder.mkdir(parents=True, exist_ok=True)
    for number, m in enumerate(catalog.manifests):
        if m.format == "openapi":
            _as_openapi_reads(m.tools)
        stem = f"m{number}"
        doc = document(m, stem)
        suffix = ".yaml" if m.format == "openapi" and yaml_for_openapi and number % 2 else ".json"
        # JSON with ASCII escapes carries lone surrogates and NaN as a JSON file would.
        text = json.dumps(doc, ensure_ascii=True, allow_nan=True)
        if suffix == ".yaml":  # real YAML where PyYAML can write the values itself; else JSON text (also YAML)
            try:
                text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)
                if not _same(yaml.safe_load(text), doc):
                    raise ValueError("round trip changed the document")
            except Exception:
                # In YAML, a bare NaN is the string "NaN" (only .nan is a number): keep such files JSON.
                if "NaN" in text:
                    suffix = ".json"
                text = json.dumps(doc, ensure_ascii=True, allow_nan=True)
        path = folder / f"{stem}{suffix}"
        path.write_text(text, encoding="utf-8")
        m.file = str(path.resolve())


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN counting as equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def acceptable_items(m: ManifestSpec, t: ToolSpec) -> set[str]:
    """The quarantine entry ``item`` a bad tool may be reported under."""
    items = {f"{m.server}::#{t.index}", f"{m.server}::GET /r{t.index}"}
    if m.format == "openapi":  # a later operation whose operationId is taken is named after its route
        items.add(f"{m.server}::get_r{t.index}")
    if isinstance(t.name, str):
        items.add(f"{m.server}::{t.name.strip()}")
        items.add(f"{m.server}::{stored_form(t.name.strip())}")
    return items
