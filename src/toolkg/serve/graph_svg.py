"""A dependency graph drawn as a static SVG: tools in layers, producers left of their consumers.

No layout engine is needed for graphs of a server's size: each tool's layer is the length of the
longest chain of producers before it (cycles broken by visiting order), tools within a layer are
ordered by the mean position of their producers (one barycentre pass), and edges are straight
lines with arrowheads, dashed when inferred and solid when declared. Tools of other servers that a
server's tools depend on are drawn amber, named by ``label`` (the report passes "server · tool").

This is the report's fallback when Graphviz ``dot`` is missing (``graph_dot.py``); like dot's drawing,
it scales to its container's width (never beyond its natural size) and its arrowhead's id is its own,
so many drawings can share one page.

>>> svg = dependency_svg([("a", "b", "declared")], {"a", "b"})
>>> svg.startswith("<svg") and svg.count("<text") == 2
True
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from html import escape

from toolkg.display import one_line
from toolkg.ontology.vocabulary import Basis

NODE_W, NODE_H, GAP_X, GAP_Y, PAD = 230, 26, 70, 14, 12  # 34 characters of 11px text fit a box


def _layers(nodes: list[str], producers_of: dict[str, set[str]]) -> dict[str, int]:
    layer: dict[str, int] = {}
    visiting: set[str] = set()

    def depth(node: str) -> int:
        if node in layer:
            return layer[node]
        if node in visiting:  # a cycle: cut it here
            return 0
        visiting.add(node)
        value = 1 + max((depth(p) for p in producers_of.get(node, ())), default=-1)
        visiting.discard(node)
        layer[node] = value
        return value

    for node in nodes:
        depth(node)
    return layer


def dependency_svg(edges: list[tuple[str, str, str]], own: set[str], label=lambda n: n.partition("::")[2] or n) -> str:
    """``edges`` are (consumer, producer, basis); ``own`` the server's tools (others drawn amber)."""
    nodes = sorted({n for e in edges for n in e[:2]})
    producers_of: dict[str, set[str]] = defaultdict(set)
    for consumer, producer, _ in edges:
        if consumer != producer:
            producers_of[consumer].add(producer)
    layer = _layers(nodes, producers_of)
    columns: dict[int, list[str]] = defaultdict(list)
    for node in nodes:
        columns[layer[node]].append(node)
    row: dict[str, float] = {}
    for index in sorted(columns):
        column = columns[index]
        column.sort(key=lambda n: (sum(row.get(p, 0) for p in producers_of[n]) / max(1, len(producers_of[n])), n))
        for position, node in enumerate(column):
            row[node] = position
    x = {n: PAD + layer[n] * (NODE_W + GAP_X) for n in nodes}
    y = {n: PAD + row[n] * (NODE_H + GAP_Y) for n in nodes}
    width = PAD * 2 + (max(columns, default=0) + 1) * (NODE_W + GAP_X) - GAP_X
    height = PAD * 2 + max((len(c) for c in columns.values()), default=1) * (NODE_H + GAP_Y) - GAP_Y
    arrow = "arrow-" + hashlib.sha1(repr(edges).encode("utf-8", "surrogatepass")).hexdigest()[:10]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="100%" style="max-width:{width}px" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12" role="img">',
        f'<defs><marker id="{arrow}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>',
    ]
    for consumer, producer, basis in edges:
        if consumer == producer:
            continue
        x1, y1 = x[producer] + NODE_W, y[producer] + NODE_H / 2
        x2, y2 = x[consumer], y[consumer] + NODE_H / 2
        dash = "" if basis == Basis.DECLARED else ' stroke-dasharray="5 3"'
        parts.append(
            f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#555"{dash} marker-end="url(#{arrow})">'
            f"<title>{escape(one_line(consumer))} depends on {escape(one_line(producer))} ({escape(basis)})"
            "</title></line>"
        )
    for node in nodes:
        fill, stroke = ("#e8f0fb", "#1f3a5f") if node in own else ("#fff4e0", "#b7791f")
        text = one_line(label(node))  # names come from manifests: control and bidi characters shown as escapes
        shown = text if len(text) <= 34 else text[:33] + "…"
        parts.append(
            f"<g><title>{escape(one_line(node))}</title>"
            f'<rect x="{x[node]}" y="{y[node]}" width="{NODE_W}" height="{NODE_H}" '
            f'rx="4" fill="{fill}" stroke="{stroke}"/>'
            f'<text x="{x[node] + 8}" y="{y[node] + 17}">{escape(shown)}</text></g>'
        )
    parts.append("</svg>")
    return "\n".join(parts)
