"""Typed hand-offs between pipeline stages.

Everything a parser finds in a manifest becomes one of these frozen models; later stages
never pass dicts around. Values that are JSON by nature (defaults, enum members, unknown
annotations) are kept as canonical JSON text so the models stay hashable and comparable.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

ManifestFormat = Literal["mcp", "mcp-catalog", "openai", "openapi", "toollinkos"]
MANIFEST_FORMATS: tuple[str, ...] = ManifestFormat.__args__  # type: ignore[attr-defined]

# The ToolLinkOS dependency kinds, named after the ontology's sub-properties of tk:dependsOn.
DependencyKind = Literal[
    "toolDirectlyDependsOn",
    "toolIndirectlyDependsOn",
    "parameterDirectlyDependsOn",
    "parameterIndirectlyDependsOn",
    "parameterDependsOn",
    "toolDependsOn",
    "dependsOn",
]

ParameterLocation = Literal["argument", "path", "query", "header", "cookie", "body"]


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


class OutputField(Frozen):
    name: str
    json_type: str = "any"
    description: str = ""


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

    def __str__(self) -> str:
        return f"{self.source}: {self.item}: [{self.stage}] {self.reason}"


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
