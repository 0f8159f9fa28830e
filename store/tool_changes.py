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
from urllib.parse import unquote

from pyoxigraph import NamedNode, Triple

from toolkg.models import ToolChange
from toolkg.ontology import RDF, TK, iris

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
    """(tool id, part kind, part name) of a node under a tool, read back from its IRI (``iris.tool_iri``: each
    segment percent-encoded): ('git::status', '', '') for the tool, ('git::status', 'param', 'repo_path') for a
    parameter, 'output', 'dep'; None for a node not under a tool."""
    if not node.value.startswith(_TOOL_PREFIX):
        return None
    server, _, rest = node.value[len(_TOOL_PREFIX) :].partition("/")
    name, _, part = rest.partition("/")
    kind, _, key = part.partition("/")
    return f"{unquote(server)}::{unquote(name)}", kind, unquote(key.rsplit("/", 1)[-1])


def diff_tools(before: Iterable[Triple], after: Iterable[Triple]) -> list[ToolChange]:
    """The tools added, changed (with their fields) and removed between two versions of server graphs' triples,
    sorted by tool id. A tool whose triples are equal is not named.

    Only the triples that differ are read (a tool's and a part's names come from their IRIs), so an unchanged
    catalog costs two set builds."""
    old, new = set(before), set(after)
    if old == new:
        return []
    # tool id -> part (kind, name, node) -> (its differing triples in the old version, in the new one)
    parts: dict[str, dict[tuple[str, str, str], tuple[set, set]]] = defaultdict(dict)
    added: set[str] = set()
    removed: set[str] = set()
    for t in old ^ new:
        if not isinstance(t.subject, NamedNode) or (where := _split(t.subject)) is None:
            continue
        tool, kind, name = where
        is_old = t in old
        if not kind and t.predicate == RDF.type and t.object == TK.Tool:
            (removed if is_old else added).add(tool)
        was, now = parts[tool].setdefault((kind, name, t.subject.value), (set(), set()))
        (was if is_old else now).add((_local(t.predicate), str(t.object)))
    changes = [ToolChange(tool=tool, change="removed") for tool in removed - added]
    changes += [ToolChange(tool=tool, change="added") for tool in added - removed]
    for tool in set(parts) - added - removed:
        if Triple(iris.tool_iri_from_id(tool), RDF.type, TK.Tool) in new and (fields := _changed_fields(parts[tool])):
            changes.append(ToolChange(tool=tool, change="changed", fields=tuple(fields)))
    return sorted(changes, key=lambda c: (c.tool, c.change))


def _changed_fields(parts: dict[tuple[str, str, str], tuple[set, set]]) -> list[str]:
    """What differs in one tool, in order, once each: its own fields, then each part's."""
    fields: dict[str, None] = {}
    for (kind, name, _), (was, now) in sorted(parts.items()):
        if not kind:  # the tool's own triples
            for predicate in sorted({p for p, _ in was | now} - _STRUCTURE - _TRUNK - {"type"}):
                fields[_FIELD_NAMES.get(predicate, predicate)] = None
            continue
        if kind == "dep":
            fields["declared dependencies"] = None
            continue
        noun = {"param": "parameter", "output": "output"}.get(kind, kind)
        typed_before, typed_after = (any(p == "type" for p, _ in side) for side in (was, now))
        if typed_before != typed_after:  # the part itself is new or gone
            fields[f"{noun} {name!r} {'added' if typed_after else 'removed'}"] = None
            continue
        differing = {p for p, _ in was | now} - _STRUCTURE
        if "position" in differing:
            fields[f"{noun} order"] = None
        for predicate in sorted(differing - {"position"}):
            fields[f"{noun} {name!r}: {_FIELD_NAMES.get(predicate, predicate)}"] = None
    return list(fields)
