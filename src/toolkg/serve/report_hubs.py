"""The report's view of a big server's dependencies: its hubs, not its hairball.

A server whose dependencies fit a readable drawing (``FULL_MAX_TOOLS`` tools, ``FULL_MAX_ARROWS`` arrows) is
drawn whole. Past that, any drawing of "the busiest 50" was a band of ~180 arrows nobody could follow
(ToolLinkOS's 523-tool server), so a big server gets instead:

- a small picture of its ``HUB_TOOLS`` tools with the most dependencies and the arrows among them;
- two tables ranked by degree: the tools most depended on (with how many tools need each, declared and
  inferred) and the tools with the most prerequisites (with the first few of them);
- the dependencies the picture leaves out, in the closed table the section already has.

Only counts and names are read here; ``report_servers`` escapes and cuts every name as it does elsewhere.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable

from toolkg.display import one_line
from toolkg.ontology.vocabulary import Basis
from toolkg.serve.graph_dot import CAP

# A whole drawing: up to graph_dot's CAP of boxes (its labels stay full size within the report's width) and
# few enough arrows to follow (ToolLinkOS's core_tools, 38 tools and 44 arrows, reads well; 50 and 209 did not).
FULL_MAX_TOOLS = CAP
FULL_MAX_ARROWS = 60
HUB_TOOLS = 12  # the big server's picture: few enough boxes that every arrow can be followed
TOP_ROWS = 15  # rows of each ranking table
NAMES_SHOWN = 6  # a consumer's prerequisites named in its row

Pair = tuple[str, str, str]  # (consumer, producer, basis), one per pair of tools


def is_small(pairs: list[Pair]) -> bool:
    """Whether the whole graph is drawn: few enough tools and arrows to read."""
    edges = [p for p in pairs if p[0] != p[1]]
    return len({n for c, p, _ in edges for n in (c, p)}) <= FULL_MAX_TOOLS and len(edges) <= FULL_MAX_ARROWS


def ranking_tables(pairs: list[Pair], label: Callable[[str], str]) -> tuple[list[list[object]], list[list[object]]]:
    """(the most depended-on tools' rows, the tools with the most prerequisites' rows), each at most ``TOP_ROWS``
    long, ties by name: [tool, tools that depend on it, declared, inferred] and [tool, prerequisites, the first
    few of them]."""
    edges = [p for p in pairs if p[0] != p[1]]
    used: Counter = Counter(p for _, p, _ in edges)
    declared: Counter = Counter(p for _, p, b in edges if b == Basis.DECLARED)
    needs: dict[str, list[str]] = defaultdict(list)
    for consumer, producer, _ in edges:
        needs[consumer].append(producer)
    producers = sorted(used, key=lambda t: (-used[t], t))[:TOP_ROWS]
    consumers = sorted(needs, key=lambda t: (-len(needs[t]), t))[:TOP_ROWS]
    most_used: list[list[object]] = [
        [one_line(label(t), 120), used[t], declared[t], used[t] - declared[t]] for t in producers
    ]
    most_needing: list[list[object]] = []
    for tool in consumers:
        names = sorted(label(p) for p in needs[tool])
        shown = ", ".join(one_line(n, 60) for n in names[:NAMES_SHOWN])
        more = f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
        most_needing.append([one_line(label(tool), 120), len(names), shown + more])
    return most_used, most_needing
