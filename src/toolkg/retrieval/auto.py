"""``auto``: the method to pick without knowing the catalog (the CLI's default). The text ranking is the
floor; the graph and the needs a request implies add only where their evidence is the stronger bet.

1. **Parts.** The whole request, its steps when the caller gives them, and the needs it implies
   (``requests.facets``: a file to write or read, a relative time that needs today's date). Splitting a
   request without steps into clauses is an option (``clauses``), off by default: on the suite's tuning
   halves it added nothing and cost conversational requests, whose second sentence often only says "that".
2. **Text first.** Each part the request says (the whole, each step) is ranked by dense and BM25 evidence
   fused by a learned model (``fusion``: it starts from hybrid's RRF and learns where to trust either side
   more). A tool's place in a part's ranking becomes a calibrated probability that the request needs it
   (``calibration.text_probability``: its rank, how well the part's best tool matched and how far it leads
   the second, what kind of part it is), never higher at a worse rank; a tool takes its best part. The
   first stage's order: the request's fused ranking, or with steps the parts interleaved (each step is a
   need: coverage first).
3. **Additions.** Each implied need brings its single best tool (one need, one tool). The ``seeds`` best
   tools of the request and of each step bring the tools they depend on, depth-first (``depth``): a
   producer is needed with probability ``p(seed) * edge_probability(...)`` along its path (1 for a declared
   edge; learned from an inferred edge's confidence and depth).
4. **The rule** (``merge``): an addition takes a place in the top k only from the weakest first-stage hit
   still there, and only when its probability is higher than that hit's own. One seed's dependencies take
   at most ``chain_share x p(seed) x k`` places, shared by the needs the request states (``places``), so a
   weak text hit's prerequisites cannot crowd out the rest; additions never take all of k. The result is
   ordered by probability, which is the score shown; ties keep a dependency right after the tool that
   needs it. The evidence behind each tool is its ``why``.
5. Servers are ranked by their best tool (ownership) in the first stage's order, the additions' servers after
   (``by_text_first``): the server a request is about is the one its text finds first, not the one of the
   date tool an implied need brought.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from toolkg.ontology.vocabulary import DEPENDENCY_KINDS, Basis
from toolkg.retrieval.base import Hit, Index, Query, Ranking, Retriever, interleave, say_once, servers_of
from toolkg.retrieval.calibration import Calibration, load_calibration
from toolkg.retrieval.choice import Choice, blended_ranking, choose, probe_figures
from toolkg.retrieval.fusion import DEPTH as TEXT_DEPTH
from toolkg.retrieval.fusion import candidates
from toolkg.retrieval.graph import dependency_edges
from toolkg.retrieval.probes import probes_of
from toolkg.retrieval.requests import clauses, facets
from toolkg.store.advice import Effects, read_effects


@dataclass(frozen=True)
class Evidence:
    probability: float
    order: int  # found order (text: the first stage's position; graph: the walk's)
    why: str
    parent: int | None = None  # a graph addition: the tool it is a dependency of
    seed: int | None = None  # a graph addition: the first-stage hit whose dependencies brought it
    condition: str | None = None  # a graph addition needed only on this condition (toolkg.store.advice)


def merge(
    first: list[tuple[int, Evidence]], additions: dict[int, Evidence], k: int, places: dict[int, int] | None = None
) -> list[tuple[int, Evidence]]:
    """The top k: the first stage's, with the additions whose evidence wins a place, ordered by score.

    The one rule of ``auto``. The first stage's hits fill the top k in their order. Additions (graph
    dependencies, each implied need's best tool) are taken strongest first: each takes the place of the
    weakest first-stage hit still there, only when its probability is higher than that hit's own. The
    dependencies one seed brings take at most ``places[seed]`` places (a seed missing from ``places``: no
    limit), an implied need one, and additions never take all of k; a dependency enters only while the tool
    that needs it is in the top k (a prerequisite alone is no use). A tool that is both keeps its stronger
    evidence and its place. The result is ordered by probability, the score shown; ties keep the order
    found, an addition right after the tool it is a dependency of.

    >>> text = [(1, Evidence(0.9, 0, "text")), (2, Evidence(0.3, 1, "text")), (4, Evidence(0.1, 2, "text"))]
    >>> added = {3: Evidence(0.5, 9, "dep", parent=1, seed=1), 5: Evidence(0.4, 10, "dep", parent=3, seed=1)}
    >>> [i for i, _ in merge(text, added, 3)]
    [1, 3, 5]
    >>> [i for i, _ in merge(text, added, 3, places={1: 1})]
    [1, 3, 2]
    """
    if k <= 0:
        return []
    places = places or {}
    top = list(first[:k])
    at = {tool: n for n, (tool, _) in enumerate(top)}
    for tool, evidence in additions.items():  # support for a hit already placed: no place taken
        if tool in at and evidence.probability > top[at[tool]][1].probability:
            top[at[tool]] = (tool, evidence)
    added: set[int] = set()
    placed = set(at)
    taken: dict[int, int] = {}  # seed -> places its dependencies took
    for tool, evidence in sorted(additions.items(), key=lambda x: (-x[1].probability, x[1].order, x[0])):
        if tool in at or tool in added:
            continue
        seed = evidence.seed
        if seed is not None and taken.get(seed, 0) >= places.get(seed, k):
            continue  # this seed's chain has the places its evidence earns
        if evidence.parent is not None and evidence.parent not in placed:
            continue  # a prerequisite of a tool that is not in the top k
        if len(top) >= k:
            if len(added) >= k - 1:
                break  # never all of k
            needed = {evidence.parent} | {e.parent for t, e in top if t in added}  # what placed additions need
            open_places = [n for n in range(len(top)) if top[n][0] not in added and top[n][0] not in needed]
            if not open_places:
                continue
            weakest = min(open_places, key=lambda n: (top[n][1].probability, -n))
            if top[weakest][1].probability >= evidence.probability:
                break  # additions come strongest first: none after this one beats a hit either
            placed.discard(top.pop(weakest)[0])
        top.append((tool, evidence))
        added.add(tool)
        placed.add(tool)
        if seed is not None:
            taken[seed] = taken.get(seed, 0) + 1
    ordered = _hang(top, added)
    return sorted(ordered, key=lambda item: -item[1].probability)  # stable: ties keep _hang's order


def stated_needs(query: Query) -> int:
    """How many needs a request states: the whole and each step of its own."""
    return 1 + len(dict.fromkeys(step for step in query.steps if step != query.text))


def chain_places(
    first: list[tuple[int, Evidence]], additions: dict[int, Evidence], k: int, share: float | None, needs: int = 1
) -> dict[int, int]:
    """How many places each seed's dependencies may take: ``share`` x p(seed) x k (None: no limit), shared by
    the ``needs`` the request states (one need's chain does not take the other needs' places), never all of
    k."""
    if share is None:
        return {}
    text = dict(first)
    seeds = {e.seed for e in additions.values() if e.seed is not None}
    return {seed: min(k - 1, round(share * text[seed].probability * k / max(needs, 1))) for seed in seeds}


def _hang(top: list[tuple[int, Evidence]], added: set[int]) -> list[tuple[int, Evidence]]:
    """Each addition right after the tool it depends on, its own additions after it (depth first), in the
    order they were placed; the rest in their order. An addition whose parent is not placed stays where it
    was placed."""
    ids = {tool for tool, _ in top}
    children: dict[int, list[tuple[int, Evidence]]] = {}
    for tool, evidence in top:
        if tool in added and evidence.parent in ids and evidence.parent != tool:
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


def by_text_first(hits: list[Hit], ranked: list[tuple[int, Evidence]], first: list[tuple[int, Evidence]]) -> list[Hit]:
    """The hits in the order the servers are ranked by: the first stage's (what the request says) in its
    order, then the additions. An implied need's tool (today's date) or a prerequisite may outscore every
    text hit, but the server the request is about is the one its text finds first: ranked by score, the
    first server of LiveMCPBench's requests was the date tool's more often than the gold one."""
    text_order = {tool: evidence.order for tool, evidence in first}  # an addition deeper in it: after the top k

    def place(n: int) -> tuple[int, int]:
        tool = ranked[n][0]
        return (0, text_order[tool]) if tool in text_order else (1, n)

    return [hits[n] for n in sorted(range(len(ranked)), key=place)]


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
        calibration: str | Path | dict | Calibration | None = None,
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
        self._effects: Effects | None = None
        self._choice: Choice | None = None

    @property
    def choice(self) -> Choice:
        """The catalog's blend of fused, dense and BM25 evidence (``toolkg.retrieval.choice``), from its probe
        queries (made by the build's index stage and kept in the store's ``probes`` cache; a store built
        before that makes them at its first query, and says so on stderr)."""
        if self._choice is None:
            mapping = self.calibration.evidence
            if mapping is None:  # weights without a map: the fused ranking, no probes needed
                self._choice = choose(None, None)
            else:
                probes = probes_of(self.index, self.index.store_dir)
                if probes.fresh:  # a store built before the index stage made them, or a cache that was lost
                    say_once(
                        f"toolkg: made the catalog's {len(probes.made)} probe queries at the first query "
                        f"({probes.seconds:.1f}s); a full build makes them ahead"
                    )
                self._choice = choose(probe_figures(probes.made, self.calibration.fusion), mapping)
        return self._choice

    @property
    def effects(self) -> Effects:
        """Which tools change state (read on first use: a query that adds no prerequisite never needs it)."""
        if self._effects is None:
            self._effects = read_effects(self.index.store)
        return self._effects

    def _edges_of(self, tool_iri: str) -> tuple[tuple[str, str, float, bool], ...]:
        """(producer, kind, confidence, declared) of one tool's dependency edges, strongest first."""
        return tuple(dependency_edges(self.index.store, tool_iri, self.kinds))

    def parts(self, query: Query) -> list[tuple[str, str]]:
        """(text, kind) of each part: the whole request, its steps or clauses, the needs it implies
        (``calibration.PART_KINDS``)."""
        split = query.steps or (clauses(query.text) if self.clauses else ())
        kind = "step" if query.steps else "clause"
        out = [(query.text, "whole")] + [(text, kind) for text in dict.fromkeys(split) if text != query.text]
        implied = facets(query.text) if self.split else []
        said = {text for text, _ in out}
        return out + [(text, "implied") for text in implied if text not in said]

    def ranked(self, text: str) -> tuple[list[tuple[int, float]], float]:
        """One part's fused text ranking (tool position, score), best first, and its best dense cosine."""
        found = candidates(self.index, text, TEXT_DEPTH)
        return blended_ranking(found, self.calibration.fusion, self.choice.weights), found.best_cosine

    def text_evidence(
        self, parts: list[tuple[str, str]]
    ) -> tuple[list[tuple[int, Evidence]], list[list[int]], dict[int, Evidence]]:
        """The first stage: the fused rankings of what the request says (the whole, its steps or clauses) in
        one order, each tool with its calibrated probability (its best over those parts); each part's ranking;
        and each implied need's single best tool, an addition."""
        best: dict[int, tuple[float, str]] = {}
        rankings: list[list[int]] = []
        implied: dict[int, Evidence] = {}
        said = sum(kind != "implied" for _, kind in parts)
        for text, kind in parts:
            ranked, top_cosine = self.ranked(text)
            margin = ranked[0][1] - ranked[1][1] if len(ranked) > 1 else 0.0
            if kind == "implied":  # one need: its one best tool
                if ranked:
                    probability = self.calibration.text_probability(1, top_cosine, kind, said, margin)
                    tool = ranked[0][0]
                    if tool not in implied or probability > implied[tool].probability:
                        why = f"implied need: {text} #1 (p {probability:.2f})"
                        implied[tool] = Evidence(probability, len(implied), why)
                continue
            rankings.append([i for i, _ in ranked])
            label = "text" if kind == "whole" else f"{kind}: {text}"
            probabilities = self.calibration.text_probabilities(len(ranked), top_cosine, kind, said, margin)
            for rank, ((tool, _), probability) in enumerate(zip(ranked, probabilities.tolist(), strict=True), 1):
                if tool not in best or probability > best[tool][0]:
                    best[tool] = (probability, f"{label} #{rank}")
        if len(rankings) > 1:
            # the caller's steps (or clauses) are each a need: every part's best tools first (coverage)
            order = [i for i, _ in interleave(rankings)]
        else:
            order = rankings[0] if rankings else []
        first = [
            (tool, Evidence(best[tool][0], n, f"{best[tool][1]} (p {best[tool][0]:.2f})"))
            for n, tool in enumerate(order)
        ]
        return first, rankings, implied

    def graph_evidence(self, first: list[tuple[int, Evidence]], rankings: list[list[int]]) -> dict[int, Evidence]:
        """What the seeds' dependencies add: producer -> its strongest path's probability."""
        text = dict(first)
        seeds = list(dict.fromkeys(tool for ranking in rankings for tool in ranking[: self.seeds]))
        found: dict[int, Evidence] = {}
        for seed in sorted(seeds, key=lambda i: (text[i].order, i)):
            self._follow(seed, seed, text[seed].probability, 0, found)
        return found

    def _follow(
        self, seed: int, node: int, probability: float, level: int, found: dict[int, Evidence], condition=None
    ) -> None:
        """Depth-first from ``node``: each producer's probability is its path's, kept when strongest. A producer
        the advice calls conditional (``toolkg.store.advice``), and everything below it, is an addition on that
        condition: its score is unchanged (the request may well need it), its ``why`` and ``condition`` say so."""
        if level >= self.depth:
            return
        catalog = self.catalog
        for producer, kind, confidence, declared in self._edges(catalog.tools[node].iri):
            position = catalog.tool_at.get(producer)
            if position is None or position == seed:
                continue
            chained = probability * self.calibration.edge_probability(confidence, declared, level + 1)
            basis = Basis.DECLARED.value if declared else f"{Basis.INFERRED.value} {confidence:.2f}"
            own = self.effects.condition(catalog.tools[position].id, kind, basis.split()[0], None, "")
            needs = own or condition
            if position in found:
                known = found[position]
                # the stronger path wins; on a tie, the one that needs the producer unconditionally
                if known.probability > chained or (known.probability == chained and (needs or not known.condition)):
                    continue
            why = f"{kind} of {catalog.tools[node].name} ({basis}; p {chained:.2f})"
            if needs:
                why = f"{why}; conditional: {needs}"
            found[position] = Evidence(chained, len(found), why, parent=node, seed=seed, condition=needs)
            below = condition or (f"only if {catalog.tools[position].name} is called" if own else None)
            self._follow(seed, position, chained, level + 1, found, below)

    def evidence(self, query: Query) -> tuple[list[tuple[int, Evidence]], dict[int, Evidence]]:
        """The first stage's hits in order, and the additions: each implied need's best tool and the tools
        the seeds depend on (a tool both keeps its stronger evidence)."""
        parts = self.parts(query)
        self.index.begin_query([text for text, _ in parts])
        first, rankings, additions = self.text_evidence(parts)
        if self.seeds and self.depth:
            # seeds come from what the request says (the whole, its steps), not from a clause split from it
            stated = rankings[: sum(kind in ("whole", "step") for _, kind in parts)]
            for tool, evidence in self.graph_evidence(first, stated).items():
                if tool not in additions or evidence.probability > additions[tool].probability:
                    additions[tool] = evidence
        return first, additions

    def places(
        self, query: Query, first: list[tuple[int, Evidence]], additions: dict[int, Evidence], k: int
    ) -> dict[int, int]:
        """How many places each seed's dependencies may take (``chain_places`` with the calibration's share)."""
        return chain_places(first, additions, k, self.calibration.chain_share, stated_needs(query))

    def retrieve(self, query: Query, k: int) -> Ranking:
        first, additions = self.evidence(query)
        ranked = merge(first, additions, k, self.places(query, first, additions, k))
        catalog = self.catalog
        hits = [Hit(catalog.tools[i], evidence.probability, evidence.why, evidence.condition) for i, evidence in ranked]
        return Ranking(hits, servers_of(catalog, by_text_first(hits, ranked, first), k))

    def search(self, text: str, k: int) -> Ranking:
        return self.retrieve(Query(id="", text=text), k)
