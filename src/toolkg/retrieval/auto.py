"""``auto``: the method to pick without knowing the catalog (the CLI's default). The graph adds; it never
displaces.

1. **Parts.** The request is split into what it asks for: its steps when it has them, else its sentences
   and clauses ("..., then ..."), each next to the whole text. A request without steps also gets the needs
   it implies (``requests.facets``: a file to write or read, a relative time that needs today's date).
2. **Text first.** Each part is ranked by ``hybrid`` (dense and BM25 fused by RRF: the best plain text
   ranking on the retrieval suite). A tool's place in a part's ranking becomes a calibrated probability
   that the request needs it (``calibration.text_probability``: its rank, how well the part's best tool
   matched, whether the need is implied); a tool takes its best part. Ordered by that probability, a
   request of one part gets exactly hybrid's ranking.
3. **Graph evidence.** The ``seeds`` most likely tools of each part bring the tools they depend on, over
   declared and inferred dependency edges, depth-first (``depth``): a producer is needed with probability
   ``p(seed) * edge_probability(...)`` along its path (the edge's calibrated confidence, its basis, how
   deep).
4. **The rule** (``merge``): every tool is ranked by its strongest evidence. A tool the graph brings
   therefore moves a text hit down, or out of the top k, only when its probability beats that hit's own;
   text hits keep their order among themselves. The evidence behind each tool is its ``why``.
5. Servers are ranked by their best tool (ownership), so the server list follows the tools.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from pyoxigraph import NamedNode

from toolkg.ontology.vocabulary import DEPENDENCY_KINDS
from toolkg.retrieval.base import Hit, Index, Query, Ranking, Retriever, servers_of
from toolkg.retrieval.baselines import HybridRetriever
from toolkg.retrieval.calibration import load_calibration
from toolkg.retrieval.requests import clauses, facets

TEXT_DEPTH = 100  # how deep each part's hybrid ranking is read
GRAPH_ORDER = 10**9  # tie order of graph additions: after every text hit of the same probability


@dataclass(frozen=True)
class Evidence:
    probability: float
    order: int  # among equal probabilities: text hits in first-stage order, then graph additions
    why: str


def merge(text: dict[int, Evidence], graph: dict[int, Evidence]) -> list[tuple[int, Evidence]]:
    """Text hits and graph additions in one ranking, each tool by its strongest evidence.

    The one rule of ``auto``: a graph addition is placed above a text hit only when its probability is
    higher than the hit's, so it can push a first-stage hit out of the top k only by beating it; text
    hits keep their first-stage order among themselves (their probabilities fall along it).

    >>> text = {1: Evidence(0.9, 0, "text"), 2: Evidence(0.3, 1, "text")}
    >>> [i for i, _ in merge(text, {3: Evidence(0.5, 2, "dep of 1"), 2: Evidence(0.2, 3, "dep of 1")})]
    [1, 3, 2]
    """
    best = dict(text)
    for tool, evidence in graph.items():
        if tool not in best or evidence.probability > best[tool].probability:
            best[tool] = evidence
    return sorted(best.items(), key=lambda item: (-item[1].probability, item[1].order, item[0]))


class AutoRetriever(Retriever):
    """Hybrid text ranking per part, calibrated, plus the dependencies that evidence supports."""

    name = "auto"

    def __init__(
        self,
        index: Index,
        seeds: int = 3,
        depth: int = 6,
        split: bool = True,
        calibration: object = None,
        kinds: tuple[str, ...] = DEPENDENCY_KINDS,
    ) -> None:
        super().__init__(index)
        if seeds < 0 or depth < 0:
            raise ValueError("seeds and depth are 0 or more")
        self.seeds, self.depth, self.split, self.kinds = seeds, depth, split, set(kinds)
        self.calibration = load_calibration(calibration)
        self.hybrid = HybridRetriever(index)
        self._edges = lru_cache(maxsize=None)(self._edges_of)

    def _edges_of(self, tool_iri: str) -> tuple[tuple[str, str, float, bool], ...]:
        """(producer, kind, confidence, declared) of one tool's dependency edges, strongest first."""
        rows = self.index.store.select(
            """SELECT ?seed ?p ?kind ?confidence ?basis WHERE {
                ?seed tk:qualifiedDependency ?d . ?d tk:onTool ?p ; tk:dependencyKind ?k .
                OPTIONAL { ?d tk:confidence ?confidence } OPTIONAL { ?d tk:basis ?b }
                BIND(STRAFTER(STR(?k), "#") AS ?kind) BIND(LCASE(STRAFTER(STR(?b), "#")) AS ?basis) }""",
            {"seed": NamedNode(tool_iri)},
        )
        best: dict[str, tuple[str, float, bool]] = {}
        for r in rows:
            if r["kind"].value not in self.kinds or r["p"].value == tool_iri:
                continue
            declared = bool(r.get("basis")) and r["basis"].value == "declared"
            confidence = float(r["confidence"].value) if r.get("confidence") else 1.0
            producer = r["p"].value
            if producer not in best or (confidence, declared) > best[producer][1:]:
                best[producer] = (r["kind"].value, confidence, declared)
        edges = sorted(best.items(), key=lambda x: (-x[1][1], not x[1][2], x[0]))
        return tuple((producer, kind, confidence, declared) for producer, (kind, confidence, declared) in edges)

    def parts(self, query: Query) -> list[tuple[str, bool]]:
        """(text, implied) of each part: the whole request, its steps or clauses, its implied needs."""
        said = [query.text, *(query.steps or (clauses(query.text) if self.split else ()))]
        implied = facets(query.text) if self.split and not query.steps else []
        return [(text, False) for text in dict.fromkeys(said)] + [(text, True) for text in implied if text not in said]

    def text_evidence(self, parts: list[tuple[str, bool]]) -> tuple[dict[int, Evidence], list[list[int]]]:
        """Each tool's best calibrated text probability over the parts, and each part's ranking."""
        evidence: dict[int, Evidence] = {}
        rankings = []
        said = sum(not implied for _, implied in parts)
        for number, (text, implied) in enumerate(parts):
            ranked, top_cosine = self.hybrid.ranked_with_cosine(text, TEXT_DEPTH)
            ranking = [i for i, _ in ranked]
            rankings.append(ranking)
            ceiling = 1.0  # probabilities never rise down a ranking
            label = f"implied need: {text}" if implied else ("text" if number == 0 else f"part: {text}")
            for rank, tool in enumerate(ranking, start=1):
                probability = self.calibration.text_probability(rank, top_cosine, implied, said)
                ceiling = min(ceiling, probability)
                order = rank * len(parts) + number  # ties: round robin over the parts (coverage first)
                if tool not in evidence or ceiling > evidence[tool].probability:
                    evidence[tool] = Evidence(ceiling, order, f"{label} #{rank} (p {ceiling:.2f})")
        return evidence, rankings

    def graph_evidence(self, text: dict[int, Evidence], rankings: list[list[int]]) -> dict[int, Evidence]:
        """What the seeds' dependencies add: producer -> its strongest path's probability."""
        seeds = list(dict.fromkeys(tool for ranking in rankings for tool in ranking[: self.seeds]))
        found: dict[int, Evidence] = {}
        for seed in sorted(seeds, key=lambda i: (-text[i].probability, i)):
            self._follow(seed, seed, text[seed].probability, 0, found)
        return found

    def _follow(self, seed: int, node: int, probability: float, level: int, found: dict[int, Evidence]) -> None:
        """Depth-first from ``node``: each producer's probability is its path's, kept when strongest."""
        if level >= self.depth:
            return
        catalog = self.catalog
        for producer, kind, confidence, declared in self._edges(catalog.tools[node].iri):
            position = catalog.tool_at.get(producer)
            if position is None or position == seed:
                continue
            chained = probability * self.calibration.edge_probability(confidence, declared, level + 1)
            if position in found and found[position].probability >= chained:
                continue
            basis = "declared" if declared else f"inferred {confidence:.2f}"
            why = f"{kind} of {catalog.tools[node].name} ({basis}; p {chained:.2f})"
            # graph additions come after text hits of equal probability, in the order they were found
            found[position] = Evidence(chained, GRAPH_ORDER + len(found), why)
            self._follow(seed, position, chained, level + 1, found)

    def retrieve(self, query: Query, k: int) -> Ranking:
        parts = self.parts(query)
        self.index.begin_query([text for text, _ in parts])
        text, rankings = self.text_evidence(parts)
        ranked = merge(text, self.graph_evidence(text, rankings) if self.seeds and self.depth else {})
        catalog = self.catalog
        hits = [Hit(catalog.tools[i], evidence.probability, evidence.why) for i, evidence in ranked[:k]]
        return Ranking(hits, servers_of(catalog, hits, k))

    def search(self, text: str, k: int) -> Ranking:
        return self.retrieve(Query(id="", text=text), k)
