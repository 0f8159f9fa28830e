"""Prerequisites without loops: an inferred graph that tells an agent to call A before B and B before A
says nothing, and a planner walking it never ends (``git_init`` <- ``git_add`` <- ``git_init``).

The inferred (consumer, producer) pairs and the manifests' declared ones form one graph. Only pairs inside
a strongly connected component can close a loop; there a pair whose producer changes state (sets, enables,
deletes: ``changes_state``) comes last, so a get/set loop keeps the read as the write's prerequisite and never
advises the write before the read (``set_wifi`` before ``get_wifi``: unsafe advice). Then pairs are taken
first when their producer opens (a session, a repository: ``git_init``), then lists or searches, then
creates (what comes first in any session: the loop's other direction is the mistake, whatever a rule or the
model was sure of), then by confidence, then by kind (a parameter's value before a tool-level ordering), and
a pair is kept unless its producer already reaches its consumer through the pairs kept. A cycle the catalog
declares stays; an inferred pair that would close one, or close one with declared pairs, goes. A tool never
depends on itself.

The result is a function of the whole edge set, so a sync session applies it to the whole catalog's edges
after each change, as a rebuild does (flows/stages/infer.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Container, Iterable, Mapping, Sequence
from typing import Any

from toolkg.canonicalize.inference.profiles import PARAMETER_DIRECT, PARAMETER_INDIRECT, TOOL_DIRECT
from toolkg.models import InferredEdge, Tool
from toolkg.text.tool_words import action_of
from toolkg.text.words import split_identifier

_ACTION_ORDER = {"open": 0, "list": 1, "search": 1, "create": 2}
_KIND_ORDER = {PARAMETER_DIRECT: 0, PARAMETER_INDIRECT: 1, TOOL_DIRECT: 2}
# Verbs of a name that change a state in place (making something new, 'create', 'init', opens a session instead)
STATE_VERBS = frozenset(
    "set enable disable toggle turn switch delete remove destroy drop clear reset update edit modify patch".split()
)


def changes_state(tool: Tool) -> bool:
    """Whether a tool changes a state in place: its MCP annotations when they say (``destructiveHint``, a
    ``readOnlyHint``), else a state verb in its name."""
    hints = tool.annotations
    if hints is not None and hints.destructive:
        return True
    if hints is not None and hints.read_only:
        return False
    return named_to_change_state(tool.name)


def named_to_change_state(name: str) -> bool:
    return any(w in STATE_VERBS for w in split_identifier(name))


class Changing(Container[str]):
    """The tools that ``changes_state``, by id, what ``acyclic`` is told: asked only of the producers of
    edges, so a sync operation reads a few tools, not the catalog. ``tool``: a tool by id (None if unknown)."""

    def __init__(self, tool: Callable[[str], Tool | None]) -> None:
        self._tool = tool

    @classmethod
    def of_profiles(cls, profiles: Mapping[str, Any]) -> Changing:
        """Of a catalog index's profiles (tool id -> a ``Profile``, which holds its ``tool``)."""

        def tool(tool_id: str) -> Tool | None:
            found = profiles.get(tool_id)
            return None if found is None else found.tool

        return cls(tool)

    def __contains__(self, tool_id: object) -> bool:
        found = self._tool(tool_id) if isinstance(tool_id, str) else None
        return found is not None and changes_state(found)


def acyclic(
    edges: Sequence[InferredEdge], declared: Collection[tuple[str, str]] = (), changing: Container[str] | None = None
) -> list[InferredEdge]:
    """``edges`` (in their order) without self-dependencies and without the pairs that would close a loop.
    ``changing``: the ids of the tools that change state (``Changing``); without it, read from names."""
    edges = [e for e in edges if e.consumer != e.producer]
    pairs: dict[tuple[str, str], tuple] = {}
    for e in edges:
        tool_name = e.producer.partition("::")[2]
        writes = named_to_change_state(tool_name) if changing is None else e.producer in changing
        first = _ACTION_ORDER.get(action_of(tool_name), len(_ACTION_ORDER))
        key = (writes, first, -e.confidence, _KIND_ORDER.get(e.kind, 3), e.consumer, e.producer)
        pairs[e.consumer, e.producer] = min(pairs.get((e.consumer, e.producer), key), key)
    fixed = {pair for pair in declared if pair[0] != pair[1]}
    where = {member: n for n, component in enumerate(_components({*pairs, *fixed})) for member in component}
    inside: dict[int, list[tuple[str, str]]] = defaultdict(list)  # each component's pairs, read once
    for pair in {*pairs, *fixed}:
        n = where.get(pair[0])
        if n is not None and where.get(pair[1]) == n:
            inside[n].append(pair)
    looped = set()
    for component_pairs in inside.values():
        looped |= _dropped(component_pairs, pairs, fixed)
    return [e for e in edges if (e.consumer, e.producer) not in looped] if looped else edges


def dropped_pairs(
    edges: Sequence[InferredEdge], declared: Collection[tuple[str, str]] = (), changing: Container[str] | None = None
) -> set[tuple[str, str]]:
    """The (consumer, producer) pairs ``acyclic`` leaves out (self-dependencies included)."""
    kept = {(e.consumer, e.producer) for e in acyclic(edges, declared, changing)}
    return {(e.consumer, e.producer) for e in edges} - kept


def _dropped(component: list[tuple[str, str]], pairs: dict, fixed: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Inside one component (its pairs): the inferred pairs that would close a loop, weakest dropped first."""
    inside = [p for p in component if p not in fixed]
    kept: dict[str, set[str]] = defaultdict(set)  # consumer -> producers it depends on
    for consumer, producer in component:
        if (consumer, producer) in fixed:
            kept[consumer].add(producer)
    dropped = set()
    for consumer, producer in sorted(inside, key=lambda p: pairs[p]):
        if _reaches(kept, producer, consumer):
            dropped.add((consumer, producer))
        else:
            kept[consumer].add(producer)
    return dropped


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, stack = {start}, [start]
    while stack:
        node = stack.pop()
        if node == goal:
            return True
        for nxt in graph.get(node, ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False


def _components(pairs: Iterable[tuple[str, str]]) -> list[set[str]]:
    """The strongly connected components of more than one node (Tarjan's, without recursion)."""
    graph: dict[str, list[str]] = defaultdict(list)
    for consumer, producer in sorted(pairs):
        graph[consumer].append(producer)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[set[str]] = []
    counter = 0
    for root in list(graph):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            successors = graph.get(node, [])
            if i < len(successors):
                work.append((node, i + 1))
                nxt = successors[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found
