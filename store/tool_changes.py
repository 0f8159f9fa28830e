"""Which tools a run added, changed or removed, and which of their fields changed: read off the difference
between a server graph's triples before and after (``diff_tools``).

The triples are compared, not the parsed tools, because both sides are then made by the same code
(extractors/triples/structural.py): an unchanged tool has identical triples, whatever a reader of the store
would normalise, so a rebuild of unchanged bytes (``--force``) names no tool. Each differing triple is
named after the part of the tool it belongs to, by its subject (the tool, one of its parameters or outputs,
a declared dependency) and its predicate.

>>> from pyoxigraph import Literal, NamedNode, Triple
>>> from toolkg.ontology import DCTERMS, RDF, TK
>>> tool = NamedNode("https://w3id.org/toolkg/id/tool/git/status")
>>> old = [Triple(tool, RDF.type, TK.Tool), Triple(tool, TK.identifier, Literal("git::status")),
...        Triple(tool, DCTERMS.description, Literal("Shows the status"))]
>>> new = old[:2] + [Triple(tool, DCTERMS.description, Literal("Shows the working tree status"))]
>>> [str(c) for c in diff_tools(old, new)]
['changed git::status: description']
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from pyoxigraph import Literal, NamedNode, Triple

from toolkg.models import ToolChange
from toolkg.ontology import TK, iris

_TOOL_PREFIX = f"{iris.BASE}tool/"

# A part's predicates as a reader names them; others by their local name (readOnlyHint, functionType, ...).
_FIELD_NAMES = {
    "description": "description",
    "jsonType": "type",
    "required": "required",
    "enumValue": "enum",
    "defaultValue": "default",
    "location": "location",
    "title": "title",
    "httpRoute": "route",
    "annotationsJson": "annotations",
}
# What says which parts a tool has, or only repeats what a part's own triples say.
_STRUCTURE = {"hasParameter", "hasOutput", "parameterOf", "outputOf", "label", "ownedBy", "identifier"}
_TRUNK = {"qualifiedDependency", "dependsOn"}  # a declared dependency's links from the tool: the node says it


def _local(term: NamedNode) -> str:
    return term.value.rsplit("#", 1)[-1].rsplit("/", 1)[-1]


def _split(node: NamedNode) -> tuple[str, str, str] | None:
    """(tool node, part kind, part key) of a node under a tool: ('.../tool/git/status', '', '') for the tool,
    ('...', 'param', 'repo_path') for a parameter, 'output', 'dep'; None for a node not under a tool."""
    if not node.value.startswith(_TOOL_PREFIX):
        return None
    server, _, rest = node.value[len(_TOOL_PREFIX) :].partition("/")
    name, _, part = rest.partition("/")
    kind, _, key = part.partition("/")
    return f"{_TOOL_PREFIX}{server}/{name}", kind, key


class _Side:
    """One side's triples under tools: each tool's id, its parts' names, and its triples by part."""

    def __init__(self, triples: Iterable[Triple]) -> None:
        self.ids: dict[str, str] = {}  # tool node -> its id (server::name)
        self.names: dict[tuple[str, str, str], str] = {}  # part -> its tk:name
        self.parts: dict[str, dict[tuple[str, str], set[tuple[str, str]]]] = defaultdict(lambda: defaultdict(set))
        for t in triples:
            if not isinstance(t.subject, NamedNode) or (where := _split(t.subject)) is None:
                continue
            tool, kind, key = where
            predicate = _local(t.predicate)
            if predicate in ("identifier", "name") and isinstance(t.object, Literal):
                if predicate == "identifier" and not kind:
                    self.ids[tool] = t.object.value
                self.names[where] = t.object.value
            self.parts[tool][(kind, key)].add((predicate, str(t.object)))

    def tools(self) -> set[str]:
        return {tool for tool, parts in self.parts.items() if ("type", str(TK.Tool)) in parts.get(("", ""), ())}


def diff_tools(before: Iterable[Triple], after: Iterable[Triple]) -> list[ToolChange]:
    """The tools added, changed (with their fields) and removed between two versions of server graphs' triples,
    sorted by tool id. A tool whose triples are equal is not named."""
    old, new = _Side(before), _Side(after)
    old_tools, new_tools = old.tools(), new.tools()
    changes = [ToolChange(tool=old.ids.get(t, t), change="removed") for t in old_tools - new_tools]
    changes += [ToolChange(tool=new.ids.get(t, t), change="added") for t in new_tools - old_tools]
    for tool in old_tools & new_tools:
        fields = _changed_fields(old, new, tool)
        if fields:
            changes.append(ToolChange(tool=new.ids.get(tool, tool), change="changed", fields=tuple(fields)))
    return sorted(changes, key=lambda c: (c.tool, c.change))


def _changed_fields(old: _Side, new: _Side, tool: str) -> list[str]:
    fields: dict[str, None] = {}  # in order, once each
    before, after = old.parts[tool], new.parts[tool]
    for part in sorted(set(before) | set(after)):
        kind, key = part
        was, now = before.get(part, set()), after.get(part, set())
        if was == now:
            continue
        if not kind:  # the tool's own triples
            for predicate in sorted({p for p, _ in was ^ now} - _STRUCTURE - _TRUNK - {"type"}):
                fields[_FIELD_NAMES.get(predicate, predicate)] = None
            continue
        if kind == "dep":
            fields["declared dependencies"] = None
            continue
        noun = {"param": "parameter", "output": "output"}.get(kind, kind)
        name = new.names.get((tool, kind, key)) or old.names.get((tool, kind, key)) or key
        if not was or not now:
            fields[f"{noun} {name!r} {'added' if now else 'removed'}"] = None
            continue
        differing = {p for p, _ in was ^ now} - _STRUCTURE
        if "position" in differing:
            fields[f"{noun} order"] = None
        for predicate in sorted(differing - {"position"}):
            fields[f"{noun} {name!r}: {_FIELD_NAMES.get(predicate, predicate)}"] = None
    return list(fields)
