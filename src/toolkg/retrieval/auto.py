"""``auto``: the method to pick without knowing the catalog (the CLI's default).

1. The request is split into what it asks for: its steps when it has them, else its sentences and
   clauses ("..., then ...", "... and then ..."), each retrieved on its own next to the whole text.
   A request without steps also gets its implied needs (``requests.facets``: a file path to write
   or read, a relative time that needs today's date).
2. Each part is ranked by dense retrieval (``first_stage``; hybrid measured no better on the tuning
   halves) and the parts' rankings are interleaved, so every part gets its best tools first
   (coverage, not consensus). An implied need's best tool follows the first round: it is wanted,
   but less surely than what the request says.
3. The ``seeds`` best tools of each part bring the tools they depend on, depth-first, through
   confident edges only (declared, or inferred at ``min_confidence`` or more), placed right after
   them unless ranked above already: what a tool needs is part of the answer even when the request
   never names it.
4. Servers are ranked by their best tool (ownership), so the server list follows the tools.
"""

from __future__ import annotations

from toolkg.retrieval.base import Hit, Index, Query, Ranking, interleave, servers_of
from toolkg.retrieval.graph import GraphFusionRetriever
from toolkg.retrieval.requests import clauses, facets

# Edges followed: at least this likely to be right (inferred confidences are the precision their evidence
# showed on the dev sets, canonicalize/calibration.py). Tuning halves: 0.7 keeps LiveMCPBench within 0.01
# of no expansion and lifts ToolLinkOS with inferred edges only from R@10 0.29 to 0.79.
MIN_CONFIDENCE = 0.7


class AutoRetriever(GraphFusionRetriever):
    """Clause-wise hybrid retrieval with dependency expansion through confident edges."""

    name = "auto"

    def __init__(
        self,
        index: Index,
        seeds: int = 3,
        depth: int = 6,
        min_confidence: float = MIN_CONFIDENCE,
        first_stage: str = "dense",
        split: bool = True,
    ) -> None:
        super().__init__(index, first_stage=first_stage, seeds=seeds, depth=depth)
        self.min_confidence, self.split = min_confidence, split

    def _edges_of(self, tool_iri: str) -> list[tuple[str, str, float]]:
        return [e for e in super()._edges_of(tool_iri) if e[2] >= self.min_confidence]

    def retrieve(self, query: Query, k: int) -> Ranking:
        texts = [query.text, *(query.steps or (clauses(query.text) if self.split else ()))]
        implied = facets(query.text) if self.split and not query.steps else []
        self.index.begin_query(texts + implied)
        depth = max(k, self.candidates)
        rankings = [self.first.search(text, depth).tools for text in texts]
        needs = [self.first.search(text, 1).tools for text in implied]
        by_iri = {h.tool.iri: h for ranking in rankings + needs for h in ranking}
        fused = [iri for iri, _ in interleave([[h.tool.iri for h in r] for r in rankings])]
        first_round = len(texts)
        said = set(fused[:first_round])  # a need a part's best tool meets already adds nothing
        implied_by = {
            r[0].tool.iri: f"implied need: {text}"
            for text, r in zip(implied, needs, strict=True)
            if r and r[0].tool.iri not in said
        }
        fused[first_round:first_round] = list(implied_by)
        seeds = {h.tool.iri for r in rankings for h in r[: self.seeds]}
        ordered: list[tuple[str, str]] = []
        placed: set[str] = set()
        for iri in fused:
            if iri not in placed:
                placed.add(iri)
                ordered.append((iri, implied_by.get(iri) or by_iri[iri].why))
            if iri in seeds:
                for producer, why in self.dependencies(iri):
                    if producer not in placed:  # ranked above already: it stays where it is
                        placed.add(producer)
                        ordered.append((producer, why))
            if len(ordered) >= k:
                break
        catalog = self.catalog
        hits = [
            Hit(catalog.tools[catalog.tool_at[iri]], 1.0 / rank, why)
            for rank, (iri, why) in enumerate(ordered[:k], start=1)
        ]
        return Ranking(hits, servers_of(catalog, hits, k))

    def search(self, text: str, k: int) -> Ranking:
        return self.retrieve(Query(id="", text=text), k)
