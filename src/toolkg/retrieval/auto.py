"""``auto``: the method to pick without knowing the catalog (the CLI's default). The graph adds; it never
displaces.

1. **Parts.** The whole request, its steps when the caller gives them, and the needs it implies
   (``requests.facets``: a file to write or read, a relative time that needs today's date). Splitting a
   request without steps into clauses is an option (``clauses``), off by default: on the suite's tuning
   halves it added nothing and cost conversational requests, whose second sentence often only says "that".
2. **Text first.** Each part is ranked by dense and BM25 evidence fused by a learned model
   (``fusion``: it starts from hybrid's RRF and learns where to trust either side more; on the suite's
   tuning halves, left out one catalog at a time, it ranks at least as well as hybrid on every catalog).
   A tool's place in a part's ranking becomes a calibrated probability
   that the request needs it (``calibration.text_probability``: its rank, how well the part's best tool
   matched, what kind of part it is); a tool takes its best part. The first stage's order: with steps,
   the parts interleaved (each step is a need: coverage first); without, the request's best tool and each
   implied need's, then every tool by probability. A request of one part gets exactly the fused ranking.
3. **Graph evidence.** The ``seeds`` best tools of the request and of each step bring the tools they depend
   on, depth-first (``depth``): a producer is needed with probability ``p(seed) * edge_probability(...)``
   along its path (1 for a declared edge; learned from an inferred edge's confidence and depth).
4. **The rule** (``merge``): a graph addition takes a place in the top k only from the weakest first-stage
   hit still there, and only when its probability is higher than that hit's own. First-stage hits keep
   their order; an addition stands right after the tool that needs it. The evidence behind each tool is
   its ``why``; its score is that evidence's probability.
5. Servers are ranked by their best tool (ownership), so the server list follows the tools.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from toolkg.ontology.vocabulary import DEPENDENCY_KINDS, Basis
from toolkg.retrieval.base import Hit, Index, Query, Ranking, Retriever, interleave, servers_of
from toolkg.retrieval.calibration import load_calibration
from toolkg.retrieval.fusion import DEPTH as TEXT_DEPTH
from toolkg.retrieval.fusion import candidates, ranking
from toolkg.retrieval.graph import dependency_edges
from toolkg.retrieval.requests import clauses, facets


@dataclass(frozen=True)
class Evidence:
    probability: float
    order: int  # found order (text: the first stage's position; graph: the walk's)
    why: str
    parent: int | None = None  # a graph addition: the tool it is a dependency of


def merge(first: list[tuple[int, Evidence]], graph: dict[int, Evidence], k: int) -> list[tuple[int, Evidence]]:
    """The top k: the first stage's, with the graph's additions where their evidence wins.

    The one rule of ``auto``: a graph addition takes a place in the top k only from the weakest first-stage
    hit still there, and only when its probability is higher than that hit's own. First-stage hits keep
    their order among themselves; an addition stands right after the tool it is a dependency of (after the
    additions already hanging there, so a chain reads in the order it was walked), or last when that tool
    is not in the top k. Additions are taken strongest first. A first-stage hit the graph supports more
    strongly than its text is placed as an addition (its own place is freed).

    >>> text = [(1, Evidence(0.9, 0, "text")), (2, Evidence(0.3, 1, "text")), (4, Evidence(0.1, 2, "text"))]
    >>> added = {3: Evidence(0.5, 9, "dep of 1", parent=1), 5: Evidence(0.05, 10, "dep of 1", parent=1)}
    >>> [i for i, _ in merge(text, added, 3)]
    [1, 3, 2]
    """
    # a first-stage hit the graph supports more strongly than its text moves up to its place in the chain
    top = [(t, e) for t, e in first[:k] if not (t in graph and graph[t].probability > e.probability)]
    placed = {tool for tool, _ in top}
    graph_made: set[int] = set()
    for tool, evidence in sorted(graph.items(), key=lambda x: (-x[1].probability, x[1].order, x[0])):
        if tool in placed:
            continue
        if len(top) >= k:
            evictable = [(e.probability, -n, n) for n, (t, e) in enumerate(top) if t not in graph_made]
            if not evictable or min(evictable)[0] >= evidence.probability:
                break  # additions come strongest first: none after this one beats a hit either
            placed.discard(top.pop(min(evictable)[2])[0])  # out: its graph evidence may bring it back
        at = len(top)
        parents = [n for n, (t, _) in enumerate(top) if t == evidence.parent]
        if parents:
            at = parents[0] + 1
            while at < len(top) and top[at][0] in graph_made:
                at += 1
        top.insert(at, (tool, evidence))
        placed.add(tool)
        graph_made.add(tool)
    return _hang(top, graph_made)


def _hang(top: list[tuple[int, Evidence]], graph_made: set[int]) -> list[tuple[int, Evidence]]:
    """Each addition right after the tool it depends on, its own additions after it (depth first), in the
    order they were placed. An addition placed before its parent was (a child likelier than its parent: not
    from auto's walk, whose products never grow, but possible for any evidence) moves there too."""
    ids = {tool for tool, _ in top}
    children: dict[int, list[tuple[int, Evidence]]] = {}
    for tool, evidence in top:
        if tool in graph_made and evidence.parent in ids and evidence.parent != tool:
            children.setdefault(evidence.parent, []).append((tool, evidence))
    hanging = {tool for items in children.values() for tool, _ in items}
    out: list[tuple[int, Evidence]] = []
    done: set[int] = set()

    def emit(item: tuple[int, Evidence]) -> None:
        if item[0] in done:
            return
        done.add(item[0])
        out.append(item)
        for child in children.get(item[0], ()):
            emit(child)

    for item in top:
        if item[0] not in hanging:
            emit(item)
    out += [item for item in top if item[0] not in done]  # a cycle of additions: where they were placed
    return out


class AutoRetriever(Retriever):
    """Fused text ranking per part, calibrated, plus the dependencies whose evidence wins a place."""

    name = "auto"

    def __init__(
        self,
        index: Index,
        seeds: int = 3,
        depth: int = 6,
        split: bool = True,
        clauses: bool = False,
        calibration: object = None,
        kinds: tuple[str, ...] = DEPENDENCY_KINDS,
    ) -> None:
        """``split``: look for the needs a request implies; ``clauses``: also split a request without steps
        into its sentences and clauses (off: measured no better, and worse on conversational requests, on
        the suite's tuning halves); ``calibration``: a JSON file or dict of weights instead of the shipped
        ones; ``kinds``: the dependency kinds followed."""
        super().__init__(index)
        if seeds < 0 or depth < 0:
            raise ValueError("seeds and depth are 0 or more")
        self.seeds, self.depth, self.split, self.clauses, self.kinds = seeds, depth, split, clauses, set(kinds)
        self.calibration = load_calibration(calibration)
        self._edges = lru_cache(maxsize=None)(self._edges_of)

    def _edges_of(self, tool_iri: str) -> tuple[tuple[str, str, float, bool], ...]:
        """(producer, kind, confidence, declared) of one tool's dependency edges, strongest first."""
        return tuple(dependency_edges(self.index.store, tool_iri, self.kinds))

    def parts(self, query: Query) -> list[tuple[str, str]]:
        """(text, kind) of each part: the whole request, its steps or clauses, the needs it implies
        (``calibration.PART_KINDS``)."""
        split = query.steps or (clauses(query.text) if self.clauses else ())
        kind = "step" if query.steps else "clause"
        out = [(query.text, "whole")] + [(text, kind) for text in dict.fromkeys(split) if text != query.text]
        implied = facets(query.text) if self.split and not query.steps else []
        said = {text for text, _ in out}
        return out + [(text, "implied") for text in implied if text not in said]

    def ranked(self, text: str) -> tuple[list[tuple[int, float]], float]:
        """One part's fused text ranking (tool position, score), best first, and its best dense cosine."""
        found = candidates(self.index, text, TEXT_DEPTH)
        return ranking(found, self.calibration.fusion), found.best_cosine

    def text_evidence(self, parts: list[tuple[str, str]]) -> tuple[list[tuple[int, Evidence]], list[list[int]]]:
        """The first stage: the parts' fused rankings in one order, each tool with its calibrated probability
        (its best over the parts), and each part's ranking."""
        best: dict[int, tuple[float, str]] = {}
        rankings = []
        said = sum(kind != "implied" for _, kind in parts)
        for text, kind in parts:
            ranked, top_cosine = self.ranked(text)
            rankings.append([i for i, _ in ranked])
            label = {"whole": "text", "implied": f"implied need: {text}"}.get(kind, f"{kind}: {text}")
            for rank, (tool, _) in enumerate(ranked, start=1):
                probability = self.calibration.text_probability(rank, top_cosine, kind, said)
                if tool not in best or probability > best[tool][0]:
                    best[tool] = (probability, f"{label} #{rank}")
        if any(kind == "step" for _, kind in parts):
            # the caller's steps are each a need: every step's best tools first (coverage, not consensus)
            order = [i for i, _ in interleave(rankings)]
        else:  # each part's best tool (the request's, then what it implies), then every tool by probability
            round_one = dict.fromkeys(r[0] for r in rankings if r)
            rest = sorted((i for i in best if i not in round_one), key=lambda i: (-best[i][0], i))
            order = [*round_one, *rest]
        first = [
            (tool, Evidence(best[tool][0], n, f"{best[tool][1]} (p {best[tool][0]:.2f})"))
            for n, tool in enumerate(order)
        ]
        return first, rankings

    def graph_evidence(self, first: list[tuple[int, Evidence]], rankings: list[list[int]]) -> dict[int, Evidence]:
        """What the seeds' dependencies add: producer -> its strongest path's probability."""
        text = dict(first)
        seeds = list(dict.fromkeys(tool for ranking in rankings for tool in ranking[: self.seeds]))
        found: dict[int, Evidence] = {}
        for seed in sorted(seeds, key=lambda i: (text[i].order, i)):
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
            basis = Basis.DECLARED.value if declared else f"{Basis.INFERRED.value} {confidence:.2f}"
            why = f"{kind} of {catalog.tools[node].name} ({basis}; p {chained:.2f})"
            found[position] = Evidence(chained, len(found), why, parent=node)
            self._follow(seed, position, chained, level + 1, found)

    def retrieve(self, query: Query, k: int) -> Ranking:
        parts = self.parts(query)
        self.index.begin_query([text for text, _ in parts])
        first, rankings = self.text_evidence(parts)
        # seeds come from what the request says (the whole, its steps), not from a clause or implied need
        said = rankings[: sum(kind in ("whole", "step") for _, kind in parts)]
        ranked = merge(first, self.graph_evidence(first, said) if self.seeds and self.depth else {}, k)
        catalog = self.catalog
        hits = [Hit(catalog.tools[i], evidence.probability, evidence.why) for i, evidence in ranked]
        return Ranking(hits, servers_of(catalog, hits, k))

    def search(self, text: str, k: int) -> Ranking:
        return self.retrieve(Query(id="", text=text), k)
