"""Structural links kept current while a catalog changes a server at a time (incremental sync).

A full pass (``structural_links``) gives every tool its top list of each link type (at most
``per_tool``, strongest first) and keeps a symmetric link only when both ends list each other.
``IncrementalLinks`` holds those top lists, and which lists name each tool, so a change
recomputes just the lists that can differ:

- the changed tools' own lists;
- lists that held an old version of a changed tool (found through the reverse index);
- lists a new version can enter: a tool it is an above-threshold candidate for (its outputs cover
  the tool's inputs; they share enough input names) whose list is short or weaker than it;
- its server mates (co-invocation compares vectors: all of them, a server is small);
- every holder of an input name whose holder count crossed ``MAX_HOLDERS`` (that name starts or
  stops counting for all of them).

Links are then re-decided only for the pairs those lists held or hold, and their mirrors, so the
result is exactly what a full pass over the new catalog gives (tests/unit/canonicalize/test_links.py checks it).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from toolkg.canonicalize.links.structural import (
    MAX_HOLDERS,
    SCHEMA_COMPATIBLE,
    SHARES_PARAMETERS,
    SYMMETRIC,
    LinkIndex,
    capped,
    name_keys,
)
from toolkg.config import LinkOptions
from toolkg.models import Tool, ToolLink

LinkKey = tuple[str, str, str]  # source, target, kind


class IncrementalLinks:
    """Every tool's top lists and the links they make, over a ``LinkIndex`` the caller keeps current."""

    def __init__(self, index: LinkIndex, options: LinkOptions | None = None) -> None:
        self.index = index
        self.options = options or LinkOptions()
        self.tops: dict[str, list[ToolLink]] = {}
        self.listed_in: dict[str, set[str]] = defaultdict(set)  # tool -> sources whose top list names it
        for source in index.tools:
            self._set_top(source)
        kept = capped([x for top in self.tops.values() for x in top], self.options.per_tool)  # as a full pass
        self.links: dict[LinkKey, ToolLink] = {(x.source, x.target, x.kind): x for x in kept}

    def update(self, changed: set[str], previous: Sequence[Tool] = ()) -> set[LinkKey]:
        """After the ``changed`` tools were put into or discarded from the index (``previous``: their
        versions before), bring the top lists and ``links`` up to date; return the keys re-decided
        (no link outside them changed)."""
        now = [self.index.tools[i] for i in changed if i in self.index.tools]
        sources = set(changed) | self._could_list(now, previous)
        for tool_id in changed:
            sources |= self.listed_in.get(tool_id, set())
        pairs: set[LinkKey] = set()
        for source in sources:
            for x in self.tops.pop(source, []):
                self.listed_in[x.target].discard(source)
                pairs.add((x.source, x.target, x.kind))
        for source in sorted(sources & self.index.tools.keys()):
            pairs |= {(x.source, x.target, x.kind) for x in self._set_top(source)}
        for tool_id in changed - self.index.tools.keys():
            self.listed_in.pop(tool_id, None)
        pairs |= {(t, s, k) for s, t, k in pairs if k in SYMMETRIC}
        for key in pairs:
            link = self._link(key)
            if link is None:
                self.links.pop(key, None)
            else:
                self.links[key] = link
        return pairs

    # --- internals ---------------------------------------------------------------------------

    def _set_top(self, source: str) -> list[ToolLink]:
        top = self.index.top_links([source], self.options)
        self.tops[source] = top
        for x in top:
            self.listed_in[x.target].add(source)
        return top

    def _listed(self, source: str, target: str, kind: str) -> ToolLink | None:
        return next((x for x in self.tops.get(source, ()) if x.target == target and x.kind == kind), None)

    def _link(self, key: LinkKey) -> ToolLink | None:
        """The link ``key`` names when its source lists it (and, symmetric, its target lists it back)."""
        source, target, kind = key
        link = self._listed(source, target, kind)
        if link is None or (kind in SYMMETRIC and self._listed(target, source, kind) is None):
            return None
        return link

    def _enters(self, source: str, kind: str, score: float) -> bool:
        """Could a candidate with this score enter ``source``'s list of this type (ties included)?"""
        listed = [x for x in self.tops.get(source, ()) if x.kind == kind]
        return len(listed) < self.options.per_tool or score >= listed[-1].score

    def _could_list(self, now: Iterable[Tool], before: Iterable[Tool]) -> set[str]:
        """Tools whose lists a new version may enter, server mates, and holders of names that crossed the cap."""
        index, options = self.index, self.options
        now, before = list(now), list(before)
        delta: Counter[str] = Counter()
        for sign, tools in ((1, now), (-1, before)):
            for tool in tools:
                for n in name_keys([p.name for p in tool.parameters]):
                    delta[n] += sign
        found: set[str] = set()
        for n, change in delta.items():
            holders = index.by_input.get(n, set())
            if (len(holders) <= MAX_HOLDERS) != (len(holders) - change <= MAX_HOLDERS):
                found |= holders
        for tool in now:
            inputs = name_keys([p.name for p in tool.parameters])
            for n in inputs:
                for s in index.by_output.get(n, ()):  # s's outputs may cover the new inputs
                    coverage = len(index.outputs[s] & inputs) / len(inputs)
                    if coverage > options.schema_overlap and self._enters(s, SCHEMA_COMPATIBLE, round(coverage, 3)):
                        found.add(s)
                holders = index.by_input.get(n, set())
                if len(holders) <= MAX_HOLDERS:  # s may now share enough input names
                    for s in holders - found:
                        jaccard = len(index.inputs[s] & inputs) / len(index.inputs[s] | inputs)
                        if jaccard > options.parameter_jaccard and self._enters(
                            s, SHARES_PARAMETERS, round(jaccard, 3)
                        ):
                            found.add(s)
            found.update(index.by_server.get(tool.server_id, ()))
        return found & index.tools.keys()
