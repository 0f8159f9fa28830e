"""Typed hand-offs between pipeline stages.

Everything a parser finds in a manifest becomes one of these frozen models; later stages
never pass dicts around. Values that are JSON by nature (defaults, enum members, unknown
annotations) are kept as canonical JSON text so the models stay hashable and comparable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, field_validator
from pyoxigraph import NamedNode, Triple

from toolkg.ontology.vocabulary import DEPENDENCY_KINDS, LINK_TYPES, Basis

ManifestFormat = Literal["mcp", "mcp-catalog", "openai", "openapi", "arazzo", "toollinkos"]
MANIFEST_FORMATS: tuple[str, ...] = ManifestFormat.__args__  # type: ignore[attr-defined]

# Closed vocabularies come from the ontology (ontology/vocabulary.py), never a list written here.
DependencyKind = Literal[DEPENDENCY_KINDS]  # type: ignore[valid-type]  # tk:dependsOn and its sub-properties
LinkType = Literal[LINK_TYPES]  # type: ignore[valid-type]  # the sub-properties of tk:linkedTo

ParameterLocation = Literal["argument", "path", "query", "header", "cookie", "body"]


MAX_REASON_CHARS = 500
MAX_RAW_CHARS = 4000
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]+")


def one_line_text(text: str, limit: int | None = None) -> str:
    """Text made one line for storing as a reason: control characters and line breaks become
    spaces, runs of space one space, and past ``limit`` characters it is cut with an ellipsis.

    >>> one_line_text("bad\\n  value\\x1b[2J here", 14)
    'bad value [2J...'
    """
    text = " ".join(_CONTROLS.sub(" ", text).split())
    return text if limit is None or len(text) <= limit else text[:limit].rstrip() + "..."


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Parameter(Frozen):
    name: str
    json_type: str = "any"
    description: str = ""
    required: bool = False
    enum: tuple[str, ...] = ()  # each member as JSON text
    default: str | None = None  # JSON text; None when the manifest gives no default
    location: ParameterLocation = "argument"
    # An object's properties or an array's items, as JSON text (schema.nested_schema: names, types,
    # descriptions, enums, defaults, required, to a few levels); None for a flat parameter. Agents are shown it
    # and the audit reads it: text nested in an object parameter reaches the model as surely as its own.
    nested: str | None = None
    # The schema component a ``$ref`` named for this parameter's value (``order-summary-object``): resolving the
    # reference would lose it, and it is often the only place that names the entity a value is.
    schema_name: str | None = None


class OutputField(Frozen):
    name: str
    json_type: str = "any"
    description: str = ""
    schema_name: str | None = None  # the component a $ref named for the field's value or its items ('workflow-run')


class DeclaredDependency(Frozen):
    """A dependency the manifest states; ``target`` is a tool name resolved at extraction."""

    target: str
    kind: DependencyKind
    parameter: str | None = None
    reason: str = ""


class Annotations(Frozen):
    title: str | None = None
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None
    other_json: str | None = None  # keys with no dedicated property, as JSON text


class Tool(Frozen):
    server_id: str
    name: str
    description: str = ""
    parameters: tuple[Parameter, ...] = ()
    outputs: tuple[OutputField, ...] = ()
    annotations: Annotations | None = None
    depends_on: tuple[DeclaredDependency, ...] = ()
    function_type: str | None = None  # a catalog's own class of tool, e.g. ToolLinkOS core/regular
    route: str | None = None  # an HTTP operation's method and path template: "GET /pets/{petId}"
    output_schema_name: str | None = None  # the component a $ref named for the whole output or its items ('pet')

    @property
    def id(self) -> str:
        return f"{self.server_id}::{self.name}"


class Server(Frozen):
    id: str
    name: str
    description: str = ""
    category: str | None = None
    homepage: str | None = None
    version: str | None = None
    tools: tuple[Tool, ...] = ()


class QuarantinedItem(Frozen):
    """An input the run could not use: what it was, where, at which stage and why."""

    source: str  # manifest path
    item: str  # tool id, server id or the path itself for a whole manifest
    stage: str
    reason: str  # one line
    raw: str = ""  # the offending input (truncated), so the item can be fixed and rerun

    @field_validator("reason")
    @classmethod
    def _one_line(cls, value: str) -> str:
        return one_line_text(value, MAX_REASON_CHARS)

    @field_validator("raw")
    @classmethod
    def _capped(cls, value: str) -> str:
        return value if len(value) <= MAX_RAW_CHARS else value[:MAX_RAW_CHARS] + "..."

    def __str__(self) -> str:  # one terminal line, whatever the names hold (display.one_line)
        from toolkg.display import one_line

        return f"{one_line(self.source)}: {one_line(self.item, 200)}: [{one_line(self.stage)}] {one_line(self.reason)}"


class Notice(Frozen):
    """An input kept but changed: trimmed to fit a limit (a description cut, enum values dropped), or read
    leniently (an OpenAPI laxity such as ``"required": "true"``: extractors/manifests/laxities.py)."""

    source: str
    item: str
    what: str  # one line

    def __str__(self) -> str:
        return f"{self.source}: {self.item}: {self.what}"


class ToolChange(Frozen):
    """One tool a run added, changed or removed, and for a change the fields that differ ('description',
    "parameter 'q': type", "output 'id' added", ...): what a summary names, store/tool_changes.py computes."""

    tool: str  # the tool's id, server::name
    change: Literal["added", "changed", "removed"]
    fields: tuple[str, ...] = ()

    def __str__(self) -> str:  # one terminal line, whatever the names hold (display.one_line)
        from toolkg.display import one_line

        what = f": {one_line(', '.join(self.fields), 300)}" if self.fields else ""
        return f"{self.change} {one_line(self.tool, 160)}{what}"


class ManifestFile(Frozen):
    """A manifest on disk before parsing: its bytes' identity."""

    path: str  # absolute
    sha256: str
    size: int


class Manifest(Frozen):
    """A parsed manifest: servers with their tools."""

    path: str
    sha256: str
    format: ManifestFormat
    servers: tuple[Server, ...] = ()

    @property
    def tool_count(self) -> int:
        return sum(len(s.tools) for s in self.servers)


class ServerGraph(BaseModel):
    """Triples of one server destined for one named graph: the server's own graph, or (with
    ``extraction_of`` set) the extraction graph of one of its tools."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    server_id: str
    graph: NamedNode
    triples: tuple[Triple, ...]
    tool_ids: tuple[str, ...] = ()
    extraction_of: str = ""  # tool id, for a tool's extraction graph


class ExtractedManifest(BaseModel):
    """A manifest as triples, per named graph: what extraction hands to validation and loading."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    manifest: Manifest
    graphs: tuple[ServerGraph, ...]
    unresolved: tuple[str, ...] = ()  # dependency target names nobody defines yet
    pending: tuple[str, ...] = ()  # tools whose semantic extraction failed: retried next run
    quarantined: tuple[QuarantinedItem, ...] = ()

    @property
    def triple_count(self) -> int:
        return sum(len(g.triples) for g in self.graphs)


# Edges and links are made by the hundred thousand: plain frozen dataclasses, not validated models.
@dataclass(frozen=True)
class InferredEdge:
    """A dependency inferred across the catalog: ``consumer`` needs ``producer`` (tool ids)."""

    consumer: str
    producer: str
    kind: str  # a DependencyKind: one of the sub-properties of tk:dependsOn
    parameter: str | None
    confidence: float
    rule: str
    evidence: str
    basis: str = Basis.INFERRED.value  # a Basis: LLM once a language model confirmed it


@dataclass(frozen=True)
class ToolLink:
    """A structural link between two tools (a LinkType), with its strength and why."""

    source: str  # tool id
    target: str  # tool id
    kind: str  # a LinkType
    score: float
    evidence: str


class StageInfo(BaseModel):
    """What one step of a run did (dlt's ExtractInfo / LoadInfo): seconds per stage, items quarantined,
    values trimmed, and (``summary_fields``) the counts it adds to the run summary. Tasks return these;
    the flow folds each into the summary (``BuildSummary.fold``), so no task writes shared state."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    seconds: dict[str, float] = {}
    quarantined: tuple[QuarantinedItem, ...] = ()
    notices: tuple[Notice, ...] = ()

    # A catalog-wide stage's info bears its stage's name, set by the stage that declares it its ``result``
    # (``toolkg.stages.StageBase``): the summary keeps its figures (``figures``) and its printed lines
    # (``lines``) under that name, so a new stage needs no new summary field.
    stage: ClassVar[str] = ""

    def summary_fields(self) -> dict[str, Any]:
        """Run-summary fields this step contributes: numbers add, lists extend, dicts merge."""
        return {}

    def figures(self) -> dict[str, Any]:
        """The stage's own figures (every field but the shared ones), as the summary keeps them."""
        return self.model_dump(mode="json", exclude=set(StageInfo.model_fields))

    def lines(self) -> list[str]:
        """How the stage's figures read in the run summary, one line each."""
        return []
