"""``toxic-flow`` findings: a toolset in which untrusted content can steer private data out.

mcp-scan reports a *toxic flow* when one agent's toolset holds a tool that reads untrusted content, one that
reads private data and one that sends data out: an instruction planted in a web page or an issue body can have
the agent read the user's files and send them away. The agent itself carries the data from one tool to the next,
so mcp-scan needs no more than the three being in the same toolset. toolkg knows more: the dependency edges of
the graph (declared, inferred, LLM-confirmed) say which tool's output feeds which tool's input. So:

- **the toolsets**: each server's tools (what a client that adds that one server gets), and the whole store
  (what ``toolkg mcp`` serves one agent: every tool of the build, across its servers);
- **the roles**: each tool's calibrated P(untrusted), P(private), P(sink) (roles.py); a tool holds a role at
  probability 0.5 or more, and one tool may hold several (a shell holds all three);
- **severity by evidence**: ``high`` when dependency edges connect the three (a path of at most
  ``MAX_PATH_EDGES`` edges in the toolset's dependency graph, read either way: a chain the agent is told to
  follow) or when one tool plays all three roles (a shell), ``medium`` when they are only present together
  (mcp-scan's own rule);
- **one finding per toolset**, not one per triple: the strongest example, connected first, then by the product
  of the three probabilities. It is given to the example's sink (the tool whose call lets the data out, so
  ``hide = ["toxic-flow"]`` takes that tool away), and names the three tools, their probabilities and, when
  connected, the path of edges between them. The store-wide finding is made only for an example whose tools
  sit on two servers or more (one server's flow is that server's finding).
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product

from toolkg.canonicalize.findings.roles import ROLE_THRESHOLD, ROLES, Roles
from toolkg.findings import Finding, FindingKind, FlowPart, Severity, safe_evidence, safe_where

TOP = 4  # candidates per role tried in each piece of a toolset: the strongest example is among them
# Edges join a flow's tools when the path through them is this short: a chain an agent is steered along. A longer
# one (inferred edges hop across a whole catalog) is no more evidence than being in the same toolset.
MAX_PATH_EDGES = 4


@dataclass(frozen=True)
class Flow:
    toolset: str  # "server X" or "store"
    parts: tuple[FlowPart, ...]  # untrusted, private, sink
    path: tuple[str, ...]  # the tools along the dependency edges joining them (empty: only co-present)

    @property
    def connected(self) -> bool:
        return bool(self.path)

    @property
    def strength(self) -> float:
        p = 1.0
        for part in self.parts:
            p *= part.probability
        return p


def toxic_flows(
    servers: Mapping[str, str],
    roles: Mapping[str, Roles],
    edges: Iterable[tuple[str, str]],
    threshold: float = ROLE_THRESHOLD,
) -> list[Flow]:
    """The strongest flow of each server, and of the whole store when it spans servers; sorted by toolset.
    ``servers``: every tool id of the toolsets with its server id; ``edges``: (consumer, producer) pairs."""
    server_of = dict(servers)
    neighbours: dict[str, set[str]] = defaultdict(set)
    for consumer, producer in edges:
        if consumer in server_of and producer in server_of and consumer != producer:
            neighbours[consumer].add(producer)
            neighbours[producer].add(consumer)
    by_server: dict[str, list[str]] = defaultdict(list)
    for tool_id, server in sorted(server_of.items()):
        by_server[server].append(tool_id)
    out = []
    for server, members in sorted(by_server.items()):
        flow = _strongest(f"server {server}", members, roles, neighbours, threshold, lambda ids: True)
        if flow is not None:
            out.append(flow)
    if len(by_server) > 1:

        def spans(ids: tuple[str, ...]) -> bool:
            return len({server_of[i] for i in ids}) > 1

        flow = _strongest("store", sorted(server_of), roles, neighbours, threshold, spans)
        if flow is not None:
            out.append(flow)
    return out


def _strongest(
    toolset: str,
    members: list[str],
    roles: Mapping[str, Roles],
    neighbours: Mapping[str, set[str]],
    threshold: float,
    allowed: Callable[[tuple[str, ...]], bool],
) -> Flow | None:
    """The strongest flow among ``members``: connected first, then by the product of its probabilities."""
    inside = set(members)
    holders = {r: [i for i in members if i in roles and roles[i].of(r) >= threshold] for r in ROLES}
    if not all(holders.values()):
        return None
    best: tuple[tuple, Flow] | None = None
    pieces = _pieces(inside, neighbours)
    # each connected piece's candidates (a connected example), then the toolset's (a co-present one)
    groups = [(True, piece) for piece in pieces] + [(False, inside)]
    for connected, group in groups:
        top = {r: _strongest_holders(holders[r], group, roles, r) for r in ROLES}
        for triple in product(*(top[r] for r in ROLES)):
            if not allowed(triple):
                continue
            parts = tuple(FlowPart(r, i, roles[i].of(r)) for r, i in zip(ROLES, triple, strict=True))
            path = _path(triple, neighbours, inside) if connected else ()
            if len(path) - 1 > MAX_PATH_EDGES:
                path = ()
            if len(set(triple)) == 1:  # one tool plays all three roles (a shell): nothing to join, high as joined
                path = triple[:1]
            flow = Flow(toolset, parts, path)
            key = (flow.connected, round(flow.strength, 6))
            # a connected example beats any co-present one; ties: the first, candidates being in (p, id) order
            if best is None or key > best[0]:
                best = (key, flow)
    return best[1] if best else None


def _strongest_holders(holders: list[str], group: set[str], roles: Mapping[str, Roles], role: str) -> list[str]:
    """The ``TOP`` tools of ``group`` most likely to hold ``role`` (ties by id)."""
    return sorted((i for i in holders if i in group), key=lambda i: (-roles[i].of(role), i))[:TOP]


def _pieces(inside: set[str], neighbours: Mapping[str, set[str]]) -> list[set[str]]:
    """The connected pieces (two tools or more) of the dependency graph among ``inside``."""
    seen: set[str] = set()
    out = []
    for start in sorted(inside):
        if start in seen or not neighbours.get(start, set()) & inside:
            continue
        piece, queue = {start}, deque([start])
        while queue:
            for n in neighbours.get(queue.popleft(), ()):
                if n in inside and n not in piece:
                    piece.add(n)
                    queue.append(n)
        seen |= piece
        out.append(piece)
    return out


def _path(triple: Sequence[str], neighbours: Mapping[str, set[str]], inside: set[str]) -> tuple[str, ...]:
    """The tools from the untrusted reader through the private reader to the sink, along shortest edge paths."""
    path: list[str] = [triple[0]]
    for goal in triple[1:]:
        leg = _shortest(path[-1], goal, neighbours, inside)
        path += leg[1:]
    return tuple(path)


def _shortest(start: str, goal: str, neighbours: Mapping[str, set[str]], inside: set[str]) -> list[str]:
    if start == goal:
        return [start]
    back: dict[str, str] = {start: start}
    queue = deque([start])
    while queue:
        at = queue.popleft()
        for n in sorted(neighbours.get(at, ())):
            if n in inside and n not in back:
                back[n] = at
                if n == goal:
                    out = [n]
                    while out[-1] != start:
                        out.append(back[out[-1]])
                    return out[::-1]
                queue.append(n)
    return [start, goal]  # not reached: the caller only asks within one connected piece


def flow_findings(flows: Iterable[Flow]) -> dict[str, list[Finding]]:
    """``{sink tool id: its toxic-flow findings}``: one per flow, on the flow's sink."""
    out: dict[str, list[Finding]] = defaultdict(list)
    for flow in flows:
        # short, to fit the evidence's line: the parts by name (a server's toolset) or by id; ``flow`` has the ids
        by_name = flow.toolset.startswith("server ")
        said = ", ".join(
            f"{p.role} {p.tool.partition('::')[2] if by_name else p.tool} {p.probability:.2f}" for p in flow.parts
        )
        if len(flow.path) == 1:
            joined = "; one tool plays all three roles"
        else:
            joined = f"; joined by {len(flow.path) - 1} edges" if flow.connected else "; only present together"
        sink = flow.parts[-1].tool
        out[sink].append(
            Finding(
                sink,
                FindingKind.TOXIC_FLOW,
                Severity.HIGH if flow.connected else Severity.MEDIUM,
                safe_where(f"toolset {flow.toolset}"),
                safe_evidence(said + joined),
                score=round(flow.strength, 4),
                flow=flow.parts,
                path=flow.path,
            )
        )
    return dict(out)
