"""Structural links between tools (FED-GRAPH-MCP's automatically derived edges), each its own type.

They say how tools relate without one needing the other, so they are kept apart from
``tk:dependsOn``; a retriever picks which to follow:

- ``coInvokedWith``: same server and tool-text embeddings (name, description, parameter names)
  with cosine above ``co_invoke`` (0.6 as in the paper): tools likely used in the same task.
- ``schemaCompatibleWith``: the producer's output names cover more than ``schema_overlap``
  (0.7) of the consumer's specific input names: its result can be fed straight in.
- ``sharesParametersWith``: Jaccard of the two tools' specific parameter names above
  ``parameter_jaccard`` (0.3).

Generic names (id, name, query, text, ...) never count, and each tool keeps at most
``per_tool`` links of each type, strongest first: the paper's lesson is that matching on
anything looser connects nearly every pair.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from toolkg.embeddings import tool_text as embedded_text
from toolkg.extractors.inference import canonical_key, is_informative
from toolkg.extractors.text import split_identifier
from toolkg.models import Tool

CO_INVOKED = "coInvokedWith"
SCHEMA_COMPATIBLE = "schemaCompatibleWith"
SHARES_PARAMETERS = "sharesParametersWith"
SYMMETRIC = frozenset({CO_INVOKED, SHARES_PARAMETERS})


@dataclass(frozen=True)
class ToolLink:
    source: str  # tool id
    target: str  # tool id
    kind: str  # CO_INVOKED | SCHEMA_COMPATIBLE | SHARES_PARAMETERS
    score: float
    evidence: str


@dataclass
class LinkOptions:
    co_invoke: float = 0.6
    schema_overlap: float = 0.7
    parameter_jaccard: float = 0.3
    per_tool: int = 5


def tool_text(tool: Tool) -> str:
    """The text a tool is embedded by (the same as dense retrieval's, so the cache serves both)."""
    return embedded_text(tool.name, tool.description, [p.name for p in tool.parameters])


def _names(names: Sequence[str]) -> frozenset[str]:
    return frozenset(k for k in map(_name_key, names) if k)


@lru_cache(maxsize=500_000)
def _name_key(name: str) -> str:
    """A parameter or output name's canonical key, '' when uninformative (memoised: sync relinks often)."""
    key = canonical_key(split_identifier(name))
    return "_".join(key) if key and is_informative(key) else ""


def _inverted(names: dict[str, set[str]]) -> dict[str, set[str]]:
    """name -> the tools that have it."""
    holders: dict[str, set[str]] = defaultdict(set)
    for tool_id, tool_names in names.items():
        for name in tool_names:
            holders[name].add(tool_id)
    return holders


def _cap(links: list[ToolLink], per_tool: int) -> list[ToolLink]:
    """At most ``per_tool`` links per source and type, strongest first; a symmetric link survives
    only when both ends keep it (mutual nearest neighbours), so it stays symmetric and bounded."""
    kept: list[ToolLink] = []
    count: dict[tuple[str, str], int] = defaultdict(int)
    for link in sorted(links, key=lambda x: (-x.score, x.source, x.target)):
        if count[link.source, link.kind] < per_tool:
            count[link.source, link.kind] += 1
            kept.append(link)
    pairs = {(x.source, x.target, x.kind) for x in kept}
    return [x for x in kept if x.kind not in SYMMETRIC or (x.target, x.source, x.kind) in pairs]


def co_invoked_links(tools: Sequence[Tool], vectors: np.ndarray, options: LinkOptions) -> list[ToolLink]:
    """Pairs on one server whose tool-text embeddings are close (both directions)."""
    by_server: dict[str, list[int]] = defaultdict(list)
    for position, tool in enumerate(tools):
        by_server[tool.server_id].append(position)
    links = []
    for members in by_server.values():
        if len(members) < 2:
            continue
        block = vectors[members]
        similarity = block @ block.T
        for i, j in zip(*np.nonzero(np.triu(similarity, 1) > options.co_invoke), strict=True):
            a, b = tools[members[i]], tools[members[j]]
            score = round(float(similarity[i, j]), 3)
            evidence = f"same server {a.server_id}, embedding cosine {score:.2f}"
            links += [
                ToolLink(a.id, b.id, CO_INVOKED, score, evidence),
                ToolLink(b.id, a.id, CO_INVOKED, score, evidence),
            ]
    return _cap(links, options.per_tool)


def schema_links(tools: Sequence[Tool], options: LinkOptions) -> list[ToolLink]:
    """Producer -> consumer when the producer's output names cover the consumer's specific inputs."""
    inputs = {t.id: _names([p.name for p in t.parameters]) for t in tools}
    by_input = _inverted(inputs)
    links = []
    for producer in tools:
        outputs = _names([o.name for o in producer.outputs])
        candidates = set().union(*(by_input.get(n, set()) for n in outputs)) - {producer.id} if outputs else set()
        for consumer_id in sorted(candidates):
            shared = outputs & inputs[consumer_id]
            coverage = len(shared) / len(inputs[consumer_id])
            if coverage > options.schema_overlap:
                evidence = f"outputs cover {len(shared)}/{len(inputs[consumer_id])} inputs: {', '.join(sorted(shared))}"
                links.append(ToolLink(producer.id, consumer_id, SCHEMA_COMPATIBLE, round(coverage, 3), evidence))
    return _cap(links, options.per_tool)


def shared_parameter_links(tools: Sequence[Tool], options: LinkOptions) -> list[ToolLink]:
    """Pairs whose specific parameter names overlap (Jaccard), found through an inverted index."""
    names = {t.id: _names([p.name for p in t.parameters]) for t in tools}
    pairs: set[tuple[str, str]] = set()
    for holders in _inverted(names).values():
        if len(holders) > 200:  # a name this common says little and would make pairs quadratic
            continue
        pairs.update((a, b) for a in holders for b in holders if a < b)
    links = []
    for a, b in sorted(pairs):
        shared = names[a] & names[b]
        jaccard = len(shared) / len(names[a] | names[b])
        if jaccard > options.parameter_jaccard:
            evidence = f"parameters {', '.join(sorted(shared))} (Jaccard {jaccard:.2f})"
            score = round(jaccard, 3)
            links += [
                ToolLink(a, b, SHARES_PARAMETERS, score, evidence),
                ToolLink(b, a, SHARES_PARAMETERS, score, evidence),
            ]
    return _cap(links, options.per_tool)


def structural_links(
    tools: Sequence[Tool], vectors: np.ndarray | None, options: LinkOptions | None = None
) -> list[ToolLink]:
    """All three link types; co-invocation only when description ``vectors`` (aligned with ``tools``) are given."""
    options = options or LinkOptions()
    links = schema_links(tools, options) + shared_parameter_links(tools, options)
    if vectors is not None:
        links += co_invoked_links(tools, vectors, options)
    return sorted(links, key=lambda x: (x.kind, x.source, x.target))
