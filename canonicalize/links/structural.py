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
from functools import lru_cache

import numpy as np

from toolkg.canonicalize.inference.profiles import canonical_key, is_informative
from toolkg.config import LinkOptions
from toolkg.embeddings.encoder import tool_text as embedded_text
from toolkg.models import Tool, ToolLink
from toolkg.ontology.vocabulary import SYMMETRIC_LINK_TYPES, link_type
from toolkg.text.words import split_identifier

CO_INVOKED = link_type("coInvokedWith")
SCHEMA_COMPATIBLE = link_type("schemaCompatibleWith")
SHARES_PARAMETERS = link_type("sharesParametersWith")
SYMMETRIC = SYMMETRIC_LINK_TYPES  # owl:SymmetricProperty in the ontology: stored once, read both ways
MAX_HOLDERS = 200  # a parameter name more tools than this share links nobody (pairs would go quadratic)
# An output name is read against at most this many of the tools taking it, those it covers best
# (fewest inputs first): a producer keeps ``per_tool`` links, and a name taken by thousands of tools
# (an ``invoice_id`` in a 100k-tool catalog) would make every producer of it score them all.
MAX_CONSUMERS_READ = 200


def tool_text(tool: Tool) -> str:
    """The text a tool is embedded by (the same as dense retrieval's, so the cache serves both)."""
    return embedded_text(tool)


def name_keys(names: Sequence[str]) -> frozenset[str]:
    return frozenset(k for k in map(_name_key, names) if k)


@lru_cache(maxsize=500_000)
def _name_key(name: str) -> str:
    """A parameter or output name's canonical key, '' when uninformative (memoised: sync relinks often)."""
    key = canonical_key(split_identifier(name))
    return "_".join(key) if key and is_informative(key) else ""


def capped(links: list[ToolLink], per_tool: int) -> list[ToolLink]:
    """At most ``per_tool`` links per source and type, strongest first; a symmetric link survives
    only when both ends keep it (mutual nearest neighbours), so it stays symmetric and bounded."""
    kept = _kept(links, per_tool)
    pairs = {(x.source, x.target, x.kind) for x in kept}
    return [x for x in kept if x.kind not in SYMMETRIC or (x.target, x.source, x.kind) in pairs]


class LinkIndex:
    """What link candidates are found through: name keys of inputs and outputs, inverted, and
    servers' members with their tool-text vectors. Candidates are generated per source tool, so the
    whole catalog and a neighbourhood (incremental sync) go through the same code; ``put`` and
    ``discard`` keep the index in step with a catalog that changes a server at a time."""

    def __init__(self, tools: Sequence[Tool], vectors: dict[str, np.ndarray] | None = None) -> None:
        self.tools: dict[str, Tool] = {}
        self.inputs: dict[str, frozenset[str]] = {}
        self.outputs: dict[str, frozenset[str]] = {}
        self.by_input: dict[str, set[str]] = defaultdict(set)
        self.by_output: dict[str, set[str]] = defaultdict(set)
        self.by_server: dict[str, list[str]] = defaultdict(list)
        self.vectors = vectors  # shared with the caller, who keeps it current
        self._similarity: dict[str, np.ndarray] = {}
        self._ranked: dict[str, list[str]] = {}  # by_input's holders, best covered first (built on demand)
        for t in tools:
            self.put(t)

    def put(self, tool: Tool) -> None:
        """Add a tool, or replace the one with its id."""
        self.discard(tool.id)
        self.tools[tool.id] = tool
        self.inputs[tool.id] = name_keys([p.name for p in tool.parameters])
        self.outputs[tool.id] = name_keys([o.name for o in tool.outputs])
        for n in self.inputs[tool.id]:
            self.by_input[n].add(tool.id)
            self._ranked.pop(n, None)
        for n in self.outputs[tool.id]:
            self.by_output[n].add(tool.id)
        self.by_server[tool.server_id].append(tool.id)
        self._similarity.pop(tool.server_id, None)

    def discard(self, tool_id: str) -> None:
        tool = self.tools.pop(tool_id, None)
        if tool is None:
            return
        for n in self.inputs.pop(tool_id):
            self.by_input[n].discard(tool_id)
            self._ranked.pop(n, None)
        for n in self.outputs.pop(tool_id):
            self.by_output[n].discard(tool_id)
        self.by_server[tool.server_id].remove(tool_id)
        self._similarity.pop(tool.server_id, None)

    def top_links(self, sources, options: LinkOptions) -> list[ToolLink]:
        """Each source's strongest links of each type above its threshold (at most ``per_tool``),
        capped source by source so a catalog's candidates never all sit in memory at once (100k tools:
        millions of schema candidates for the few hundred thousand links kept)."""
        links: list[ToolLink] = []
        for source in sources:
            found = self._schema(source, options) + self._shared(source, options)
            if self.vectors is not None:
                found += self._co_invoked(source, options)
            links += _kept(found, options.per_tool)
        return links

    def _schema(self, producer: str, options: LinkOptions) -> list[ToolLink]:
        outputs = self.outputs[producer]
        candidates = set().union(*(self._consumers(n) for n in outputs)) - {producer} if outputs else set()
        links = []
        for consumer in sorted(candidates):
            shared = outputs & self.inputs[consumer]
            coverage = len(shared) / len(self.inputs[consumer])
            if coverage > options.schema_overlap:
                evidence = (
                    f"outputs cover {len(shared)}/{len(self.inputs[consumer])} inputs: {', '.join(sorted(shared))}"
                )
                links.append(ToolLink(producer, consumer, SCHEMA_COMPATIBLE, round(coverage, 3), evidence))
        return links

    def _consumers(self, name: str) -> list[str]:
        """The tools taking ``name`` that an output of that name covers best: fewest inputs (then id)
        first, at most ``MAX_CONSUMERS_READ``."""
        ranked = self._ranked.get(name)
        if ranked is None:
            holders = self.by_input.get(name, ())
            ranked = sorted(holders, key=lambda c: (len(self.inputs[c]), c))[:MAX_CONSUMERS_READ]
            self._ranked[name] = ranked
        return ranked

    def _shared(self, a: str, options: LinkOptions) -> list[ToolLink]:
        names = self.inputs[a]
        others = set()
        for n in names:
            if len(self.by_input[n]) <= MAX_HOLDERS:  # a name this common says little, and pairs go quadratic
                others |= self.by_input[n]
        links = []
        for b in sorted(others - {a}):
            shared = names & self.inputs[b]
            jaccard = len(shared) / len(names | self.inputs[b])
            if jaccard > options.parameter_jaccard:
                evidence = f"parameters {', '.join(sorted(shared))} (Jaccard {jaccard:.2f})"
                links.append(ToolLink(a, b, SHARES_PARAMETERS, round(jaccard, 3), evidence))
        return links

    def _co_invoked(self, a: str, options: LinkOptions) -> list[ToolLink]:
        server = self.tools[a].server_id
        members = self.by_server[server]
        if len(members) < 2:
            return []
        if server not in self._similarity:
            assert self.vectors is not None, "co-invocation is asked only with vectors"
            block = np.vstack([self.vectors[m] for m in members])
            self._similarity[server] = block @ block.T
        similarity = self._similarity[server]
        i = members.index(a)
        # One value for both directions: the upper triangle's (row j < i reads column i).
        row = np.concatenate([similarity[:i, i], similarity[i, i:]])
        links = []
        for j in np.flatnonzero(row > options.co_invoke):
            if j != i:
                score = round(float(row[j]), 3)
                evidence = f"same server {server}, embedding cosine {score:.2f}"
                links.append(ToolLink(a, members[j], CO_INVOKED, score, evidence))
        return links


def _kept(links: list[ToolLink], per_tool: int) -> list[ToolLink]:
    """At most ``per_tool`` links per source and type, strongest first."""
    kept: list[ToolLink] = []
    count: dict[tuple[str, str], int] = defaultdict(int)
    for link in sorted(links, key=lambda x: (-x.score, x.source, x.target)):
        if count[link.source, link.kind] < per_tool:
            count[link.source, link.kind] += 1
            kept.append(link)
    return kept


def co_invoked_links(tools: Sequence[Tool], vectors: np.ndarray, options: LinkOptions) -> list[ToolLink]:
    """Pairs on one server whose tool-text embeddings are close (both directions)."""
    index = LinkIndex(tools, dict(zip([t.id for t in tools], vectors, strict=True)))
    return capped([x for x in index.top_links(index.tools, options) if x.kind == CO_INVOKED], options.per_tool)


def schema_links(tools: Sequence[Tool], options: LinkOptions) -> list[ToolLink]:
    """Producer -> consumer when the producer's output names cover the consumer's specific inputs."""
    index = LinkIndex(tools)
    return capped([x for x in index.top_links(index.tools, options) if x.kind == SCHEMA_COMPATIBLE], options.per_tool)


def shared_parameter_links(tools: Sequence[Tool], options: LinkOptions) -> list[ToolLink]:
    """Pairs whose specific parameter names overlap (Jaccard), found through an inverted index."""
    index = LinkIndex(tools)
    return capped([x for x in index.top_links(index.tools, options) if x.kind == SHARES_PARAMETERS], options.per_tool)


def structural_links(
    tools: Sequence[Tool], vectors: np.ndarray | None, options: LinkOptions | None = None
) -> list[ToolLink]:
    """All three link types; co-invocation only when description ``vectors`` (aligned with ``tools``) are given."""
    options = options or LinkOptions()
    by_id = dict(zip([t.id for t in tools], vectors, strict=True)) if vectors is not None else None
    index = LinkIndex(tools, by_id)
    links = capped(index.top_links(index.tools, options), options.per_tool)
    return sorted(links, key=lambda x: (x.kind, x.source, x.target))
