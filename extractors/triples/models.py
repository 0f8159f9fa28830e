"""The typed output both triple extractors produce, and the LLM's response model.

Entity types and relations are closed choices generated from the ontology (see
``toolkg.ontology.schema``); a validator checks each triple's head and tail types against
the relation's domain and range, and that a Tool or Parameter end names the tool being
described. A triple that breaks the ontology raises ``ValueError``, which makes instructor
re-ask the model with the message; the offline extractor goes through the same check.

>>> Model = response_model()
>>> ok = Model.model_validate(
...     {"triples": [{"head": "get_quote", "head_type": "Tool", "relation": "hasEntity",
...                   "tail": "Stock Prices", "tail_type": "BusinessObject"}]},
...     context=ToolContext(name="get_quote", parameters=("symbol",)))
>>> ok.triples[0].tail
'Stock Prices'
>>> try:
...     Model.model_validate({"triples": [{"head": "get_quote", "head_type": "Tool",
...         "relation": "hasEntity", "tail": "sales", "tail_type": "Department"}]})
... except ValueError as exc:
...     print(exc.errors()[0]["msg"])
Value error, hasEntity goes from Tool to BusinessObject; got Tool -> Department ('get_quote' -> 'sales')
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter
from functools import cache, lru_cache
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, create_model, field_validator, model_validator

from toolkg.models import Server, Tool
from toolkg.ontology.predicates import map_predicate
from toolkg.ontology.schema import PredicateSpec, extraction_schema
from toolkg.text.lexicon import CAPABILITIES
from toolkg.text.words import MAX_ENTITY_CHARS

MAX_TRIPLES = 60
MAX_NAME = MAX_ENTITY_CHARS  # an entity's name; a Tool or Parameter end names an existing thing instead
MAX_REFERENCE = 1024  # a Tool or Parameter end: the tool's or parameter's own name (the name limit caps it)
_HAS_WORD = re.compile(r"[^\W\d_]", re.UNICODE)  # at least one letter, in any script


class PredicateLog:
    """Relations a model wrote that were not ontology names: mapped (to what) or unmapped."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.mapped: Counter[str] = Counter()  # "works for -> usedBy (synonym)"
        self.unmapped: Counter[str] = Counter()

    def record(self, text: str, name: str | None, method: str) -> None:
        if method == "exact" and text == name:
            return
        with self._lock:
            if name is None:
                self.unmapped[text] += 1
            else:
                self.mapped[f"{text} -> {name} ({method})"] += 1


class ToolContext(BaseModel):
    """What a triple may refer to: the tool's own name and its parameter names."""

    model_config = ConfigDict(frozen=True)

    name: str
    parameters: tuple[str, ...] = ()


class ExtractedTriple(BaseModel):
    model_config = ConfigDict(frozen=True)

    head: str
    head_type: str
    relation: str
    tail: str
    tail_type: str


class ExtractionProvenance(BaseModel):
    """Who made a tool's triples, from what: recorded on the tool's extraction graph."""

    model_config = ConfigDict(frozen=True)

    extractor: str
    extractor_version: str
    input_hash: str
    model: str = ""
    prompt_id: str = ""
    prompt_hash: str = ""
    run_id: str = ""  # the run whose extractor call produced them (a cached result keeps its first run)


class ToolExtraction(BaseModel):
    model_config = ConfigDict(frozen=True)

    tool_id: str
    triples: tuple[ExtractedTriple, ...]
    provenance: ExtractionProvenance
    action: str = ""  # the lead verb, lemmatised (offline extractor)
    notes: tuple[str, ...] = ()


class ExtractionFailure(BaseModel):
    """A tool the extractor gave up on: quarantined with the error and the raw reply."""

    model_config = ConfigDict(frozen=True)

    tool_id: str
    reason: str
    raw: str = ""
    retry: bool = True  # a transient failure (an LLM that timed out): the next run tries the tool again


def check_triple(head: str, head_type: str, relation: str, tail: str, tail_type: str, context) -> None:
    """Raise ``ValueError`` (with a message a model can act on) if the triple breaks the ontology."""
    schema = extraction_schema()
    spec = schema.predicates[relation]
    if head_type not in spec.domain or tail_type not in spec.range:
        raise ValueError(
            f"{relation} goes from {' or '.join(sorted(spec.domain))} to {' or '.join(sorted(spec.range))}; "
            f"got {head_type} -> {tail_type} ({head!r} -> {tail!r})"
        )
    for name, kind in ((head, head_type), (tail, tail_type)):
        if kind in ("Tool", "Parameter"):  # a reference to the tool or one of its parameters, by name
            if context is None:
                continue
            if kind == "Tool" and not same_name(name, context.name):
                raise ValueError(f"a Tool end must be this tool's name {context.name!r}, not {name!r}")
            if kind == "Parameter" and not any(same_name(name, p) for p in context.parameters):
                allowed = ", ".join(context.parameters) or "(this tool has none)"
                raise ValueError(f"{name!r} is not a parameter of {context.name!r}; its parameters are: {allowed}")
            continue
        if not _HAS_WORD.search(name):
            raise ValueError(f"{kind} name {name!r} has no letters")
        if len(name) > MAX_NAME:
            raise ValueError(f"{kind} name is {len(name)} characters; keep names under {MAX_NAME}")


def same_name(a: str, b: str) -> bool:
    """Names equal up to case and runs of whitespace (how a model may echo a tool's name back)."""
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def _context(info: ValidationInfo) -> ToolContext | None:
    context = info.context
    if isinstance(context, dict):
        context = context.get("tool")
    return context if isinstance(context, ToolContext) else None


class _Reply(BaseModel):
    # The same reply with a schema for constrained decoding (``LLMClient`` asks for it in JSON-schema mode)
    for_constrained_decoding: ClassVar[type[BaseModel] | None] = None


# The decoding schema's caps: the decoder must close each list there (SmolLM2-135M on llama.cpp otherwise
# repeated one triple until its token budget ran out). A tool does one or two kinds of things, for one or two
# domains or departments.
DECODING_MAX_NAMES = {"Capability": 3, "LineOfBusiness": 2, "Department": 2}
DECODING_MAX_NAMES_DEFAULT = 6
DECODING_MAX_TRIPLES = 4  # the entity-to-entity facts (relatedTo, contains, ...): rare in one tool's text
# Names the decoder may choose from, per type: a capability is an action class (the ontology's comment), and
# these are the classes the offline extractor knows, so both extractors name the same nodes.
DECODING_CLOSED_NAMES: dict[str, tuple[str, ...]] = {"Capability": CAPABILITIES}


@cache
def _decoding_relations() -> tuple[dict[str, PredicateSpec], dict[str, PredicateSpec], dict[str, PredicateSpec]]:
    """The ontology's relations as the tool-centred reply lays them out: (from the tool, from one of its
    parameters, between entities). Tool -> Parameter (hasParameter) is left out: the structural extractor
    states every parameter from the manifest, and a model that lists them again only spends tokens."""
    from_tool, from_parameter, between = {}, {}, {}
    for name, spec in extraction_schema().predicates.items():
        if spec.domain == {"Tool"} and len(spec.range) == 1:  # a list of names of the one type
            if not spec.range & {"Tool", "Parameter"}:
                from_tool[name] = spec
        elif spec.domain == {"Parameter"}:
            from_parameter[name] = spec
        else:
            between[name] = spec
    return from_tool, from_parameter, between


def _name_schema(kind: str) -> dict:
    if kind in DECODING_CLOSED_NAMES:
        return {"type": "string", "enum": list(DECODING_CLOSED_NAMES[kind])}
    return {"type": "string", "minLength": 1, "maxLength": MAX_NAME}


class _ToolCentred(_Reply):
    """The reply as a server that constrains decoding to a JSON schema is asked for it: one list of names per
    relation from the tool (``"hasCapability": ["search"]``), one of {parameter, entity, entity_type} per
    relation from a parameter, and typed triples, one alternative per relation, only for facts between
    entities. The decoder then writes only what the ontology allows, and never the tool's name or a type
    that has one choice: a small model spent its tokens repeating those (SmolLM2-135M wrote twelve copies of
    one invalid triple per tool, 600 tokens, under the plain triple list). The reply is turned back into
    triples before validation, so the same validators decide what is kept. Only for that mode: elsewhere
    the schema is read by the model as part of its prompt, where the compact triple list costs fewer
    tokens."""

    # The tool's parameter names, when the schema is made for one tool (``decoding_model``): a parameter end
    # is then one of them, and a tool without parameters gets no list of facts from a parameter.
    decoding_parameters: ClassVar[tuple[str, ...] | None] = None

    @model_validator(mode="before")
    @classmethod
    def _as_triples(cls, data, info: ValidationInfo):
        from_tool, from_parameter, _ = _decoding_relations()
        if not isinstance(data, dict) or not (data.keys() & (from_tool.keys() | from_parameter.keys())):
            return data  # a plain triple list (as any other mode writes it) is read as it is
        tool = _context(info)
        head = tool.name if tool else "this tool"  # the Tool end is checked against the context, when there is one
        triples = list(data.get("triples") or [])
        for relation, spec in from_tool.items():
            (kind,) = spec.range
            for item in _listed(data, relation):
                triples.append(
                    {"head": head, "head_type": "Tool", "relation": relation, "tail": item, "tail_type": kind}
                )
        for relation in from_parameter:
            for item in _listed(data, relation):
                item = item if isinstance(item, dict) else {}
                triples.append(
                    {
                        "head": item.get("parameter"),
                        "head_type": "Parameter",
                        "relation": relation,
                        "tail": item.get("entity"),
                        "tail_type": item.get("entity_type"),
                    }
                )
        return {"triples": triples}

    @classmethod
    def model_json_schema(cls, *args, **kwargs) -> dict:
        schema = super().model_json_schema(*args, **kwargs)
        definitions = schema.get("$defs", {})
        items = schema["properties"]["triples"]["items"]
        triple = definitions.get(items.get("$ref", "").rsplit("/", 1)[-1])
        if triple is None:
            return schema
        from_tool, from_parameter, between = _decoding_relations()
        properties: dict[str, dict] = {}
        for relation, spec in from_tool.items():
            (kind,) = spec.range
            properties[relation] = {
                "type": "array",
                "items": _name_schema(kind),
                "maxItems": DECODING_MAX_NAMES.get(kind, DECODING_MAX_NAMES_DEFAULT),
                "description": f"{spec.label}: {kind} names",
            }
        parameters = cls.decoding_parameters
        if parameters is None:  # not made for one tool: any parameter name, checked by the validators
            parameter, most = {"type": "string", "minLength": 1, "maxLength": MAX_REFERENCE}, DECODING_MAX_NAMES_DEFAULT
        else:
            parameter, most = {"enum": list(parameters)}, min(DECODING_MAX_NAMES_DEFAULT, len(parameters))
        for relation, spec in from_parameter.items() if most else ():  # a tool without parameters: no such list
            entity = {
                "parameter": parameter,
                "entity": {"type": "string", "minLength": 1, "maxLength": MAX_NAME},
                "entity_type": {"enum": sorted(spec.range)},
            }
            properties[relation] = {
                "type": "array",
                "items": {"type": "object", "properties": entity, "required": list(entity)},
                "maxItems": most,
                "description": f"{spec.label}: the entity a parameter of this tool names",
            }
        shapes = []
        for name, spec in between.items():
            shape = dict(triple["properties"])
            shape["head_type"] = {**shape["head_type"], "enum": sorted(spec.domain)}
            shape["relation"] = {**shape["relation"], "enum": [name]}
            shape["tail_type"] = {**shape["tail_type"], "enum": sorted(spec.range)}
            for end in ("head", "tail"):  # an entity's name: the ontology's limit, not a reference's
                shape[end] = {**shape[end], "maxLength": MAX_NAME}
            shapes.append({**triple, "properties": shape, "title": f"Triple ({name})"})
        properties["triples"] = {
            **schema["properties"]["triples"],
            "items": {"anyOf": shapes},
            "maxItems": DECODING_MAX_TRIPLES,
            "description": "facts between entities",
        }
        del definitions[items["$ref"].rsplit("/", 1)[-1]]
        schema["properties"] = properties
        schema["required"] = list(properties)  # every list written, in this order (an empty one is allowed)
        if not definitions:
            schema.pop("$defs", None)
        return schema


def _listed(data: dict, relation: str) -> list:
    value = data.get(relation)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{relation} must be a list, not {type(value).__name__}")
    return value


@lru_cache(maxsize=1024)  # tools of one server often share their parameters' names
def decoding_model(parameters: tuple[str, ...]) -> type[BaseModel]:
    """The reply asked of a server that constrains decoding, for a tool with these parameter names: the
    decoder can name no parameter the tool does not have (a small model otherwise named its server)."""
    base = response_model().for_constrained_decoding
    assert base is not None, "response_model() sets it"
    return type(base.__name__, (base,), {"decoding_parameters": tuple(parameters), "__module__": __name__})


@cache
def response_model() -> type[_Reply]:
    """``ToolTriples``: the structured reply asked of the LLM, generated from the ontology."""
    schema = extraction_schema()
    # Built at run time from the ontology: no static type describes it, so Any to create_model
    type_names: Any = Literal[tuple(schema.types)]

    def strip(cls, value: str) -> str:
        return " ".join(value.split())

    def relation(cls, value, info: ValidationInfo) -> str:
        name, method, _ = map_predicate(str(value))
        log = info.context.get("predicates") if isinstance(info.context, dict) else None
        if log is not None:
            log.record(str(value), name, method)
        if name is None:
            raise ValueError(f"relation {value!r} is not in the ontology; use one of: {', '.join(schema.predicates)}")
        return name

    def ontology(self, info: ValidationInfo):
        check_triple(self.head, self.head_type, self.relation, self.tail, self.tail_type, _context(info))
        return self

    # pydantic's decorators, applied by hand: create_model takes what they return (its stub says plain callables)
    validators: dict[str, Any] = {
        "strip_names": field_validator("head", "tail", mode="before")(classmethod(strip)),
        "map_relation": field_validator("relation", mode="before")(classmethod(relation)),
        "ontology": model_validator(mode="after")(ontology),
    }
    triple = create_model(
        "Triple",
        __doc__="One fact (head, relation, tail) about the tool; both ends typed by the ontology.",
        head=(str, Field(min_length=1, max_length=MAX_REFERENCE, description="name of the head entity")),
        head_type=(type_names, Field(description="ontology type of the head")),
        # Free text mapped onto the ontology (synonyms, fuzzy): a model that writes "works for" is
        # understood; the JSON schema still offers the closed list.
        relation=(str, Field(description="ontology relation", json_schema_extra={"enum": list(schema.predicates)})),
        tail=(str, Field(min_length=1, max_length=MAX_REFERENCE, description="name of the tail entity")),
        tail_type=(type_names, Field(description="ontology type of the tail")),
        __validators__=validators,
    )
    doc = "The triples extracted from one tool's documentation."
    triples = (list[triple], Field(max_length=MAX_TRIPLES))
    reply = create_model("ToolTriples", __doc__=doc, __base__=_Reply, triples=triples)
    reply.for_constrained_decoding = create_model("ToolTriples", __doc__=doc, __base__=_ToolCentred, triples=triples)
    return reply


def to_extracted(reply: BaseModel) -> tuple[ExtractedTriple, ...]:
    """The validated reply's triples as plain ``ExtractedTriple``s, duplicates dropped, order kept."""
    seen: dict[tuple[str, ...], ExtractedTriple] = {}
    for t in reply.triples:  # type: ignore[attr-defined]
        key = (t.head.casefold(), t.head_type, t.relation, t.tail.casefold(), t.tail_type)
        seen.setdefault(
            key,
            ExtractedTriple(
                head=t.head, head_type=t.head_type, relation=t.relation, tail=t.tail, tail_type=t.tail_type
            ),
        )
    return tuple(seen.values())


def tool_document(tool: Tool, server: Server) -> dict:
    """Everything an extractor reads about a tool; its hash keys the LLM cache and provenance."""
    return {
        "name": tool.name,
        "description": tool.description,
        "server": {"name": server.name, "category": server.category or "", "description": server.description},
        "parameters": [
            {"name": p.name, "type": p.json_type, "required": p.required, "description": p.description}
            for p in tool.parameters
        ],
        "outputs": [{"name": o.name, "type": o.json_type, "description": o.description} for o in tool.outputs],
    }


def input_hash(document: dict) -> str:
    return hashlib.sha256(json.dumps(document, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
