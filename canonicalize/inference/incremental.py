"""Dependency inference kept current while a catalog changes a few tools at a time (incremental sync).

``IncrementalInference`` keeps a ``CatalogIndex`` (index.py) and, for every consumer, what each rule gave
it before sparsification, the catalog-wide counts sparsification reads (the fan-out of each producer and
rule), every server's candidates for the learned model and each consumer's judgement. ``apply`` files a
change into the index and asks again only the (consumer, rule) pairs the change can reach
(``reach.py`` says which); the edges it returns for those consumers are exactly what
``infer_dependencies`` gives the new catalog, ordered by id as the store reads it
(tests/unit/canonicalize/test_incremental_inference.py checks it over random changes).

Where a catalog-wide count crosses a threshold the neighbourhood widens, so equality holds:

- a token's tool count against ``rare_token_share`` of the catalog (a service namespace appears or
  goes): its tools are asked again, and whatever reads their namespace;
- a (producer, rule)'s fan-out against ``weak_fanout_cap``: its consumers are sparsified again;
- a server's size against ``MAX_SERVER_TOOLS``: a changed server's tools are asked again anyway;
- a catalog's count of connectivity checks (one or not): every tool of that catalog is asked again
  (that rule's edges do reach all of them), and a status check's resource is looked for in every tool of
  its catalog (a scan). ``stats`` counts how often each wide case ran.

The learned model judges a consumer from its server's candidates, the rules' edges into it and three
counts of the catalog (server sizes, how many consumers each producer is a candidate for, which producers
feed a parameter of their own server): a consumer is judged again when its server changed, its rule edges
changed, or one of those counts changed for a producer it has a candidate from.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping

from toolkg.canonicalize.inference.catalog_rules import (
    connectivity_edges,
    namespace_auth_edges,
    precondition_edges,
    read_before_write_edges,
)
from toolkg.canonicalize.inference.competition import compete
from toolkg.canonicalize.inference.files import file_edges
from toolkg.canonicalize.inference.identifiers import identifier_edges, login_edges, opener_edges
from toolkg.canonicalize.inference.index import CatalogIndex
from toolkg.canonicalize.inference.infer import doubted, kept_across, parameter_edges, sparsify_edges, with_learned
from toolkg.canonicalize.inference.mentions import mention_edges
from toolkg.canonicalize.inference.pair_candidates import Candidate, server_candidates
from toolkg.canonicalize.inference.pairs import (
    JudgeContext,
    Judgement,
    candidate_fanout,
    feeds_own_server,
    judge_candidates,
    judge_consumer,
)
from toolkg.canonicalize.inference.profiles import Profile
from toolkg.canonicalize.inference.reach import Reach
from toolkg.canonicalize.inference.rest import rest_edges
from toolkg.canonicalize.inference.typed_join import typed_join_edges
from toolkg.config import InferenceOptions
from toolkg.models import InferredEdge, Tool

# The rules, in the order ``infer_dependencies`` lists their edges (a consumer's edges keep that order:
# sparsification keeps the first of two equal edges).
RULES: dict[str, Callable[[CatalogIndex, list[Profile], dict | None], list[InferredEdge]]] = {
    "parameter": parameter_edges,
    "mention": lambda ix, consumers, _: mention_edges(ix, consumers),
    "identifier": lambda ix, consumers, _: identifier_edges(ix.by_server, consumers),
    "opener": lambda ix, consumers, _: opener_edges(ix.by_server, consumers),
    "server login": lambda ix, consumers, _: login_edges(ix.by_server, consumers),
    "rest": lambda ix, consumers, _: rest_edges(ix.by_server, consumers),
    "join": lambda ix, consumers, _: typed_join_edges(ix.by_server, consumers),
    "file": lambda ix, consumers, _: file_edges(ix.writers, consumers),
    "login": lambda ix, consumers, _: namespace_auth_edges(ix, consumers),
    "precondition": lambda ix, consumers, _: precondition_edges(ix, consumers),
    "connectivity": lambda ix, consumers, _: connectivity_edges(ix, consumers),
    "state": lambda ix, consumers, _: read_before_write_edges(ix, consumers),
}


class _Hubs:
    """Producers that need no input (exempt from the fan-out cap), read from the index."""

    def __init__(self, index: CatalogIndex) -> None:
        self.index = index

    def __contains__(self, tool_id: object) -> bool:
        p = self.index.profiles.get(tool_id) if isinstance(tool_id, str) else None  # ids are strings
        return p is not None and not p.needs_input


class IncrementalInference:
    """A catalog's inferred dependencies, kept current by ``apply`` (the module doc). ``catalogs`` is read
    live: the caller sets a synced server's catalog before applying its change."""

    def __init__(
        self,
        tools: Iterable[Tool],
        options: InferenceOptions | None = None,
        declared: Iterable[tuple[str, str]] = (),
        catalogs: Mapping[str, str] | None = None,
    ) -> None:
        self.options = options or InferenceOptions()
        self.declared = set(declared)
        self.catalogs = catalogs if catalogs is not None else {}
        self.stats: Counter[str] = Counter()  # how often each wide case ran (the module doc)
        self.reached = 0  # consumers the last change reached (asked again by a rule, or sparsified again)
        self._build(list(tools))

    def _build(self, tools: list[Tool]) -> None:
        self.filtering = bool(self.catalogs)
        self.index = index = CatalogIndex(tools, self.options, self.catalogs, kept=True)
        self.hubs = _Hubs(index)
        self.rules: dict[str, dict[str, list[InferredEdge]]] = {}  # consumer -> rule -> its edges (non-empty)
        self.pre: dict[str, list[InferredEdge]] = {}  # every rule's edges into a consumer, in rule order
        self.post: dict[str, list[InferredEdge]] = {}  # those the catalogs' filter keeps
        self.by_producer: dict[str, set[str]] = defaultdict(set)  # producer -> consumers of its rule edges
        self.fanout: Counter[tuple[str, str]] = Counter()  # (producer, rule) -> edges after the filter
        self.feeders: Counter[str] = Counter()  # producer -> rule edges feeding a parameter of its server
        self.reach = Reach(index)
        self.candidates: dict[str, dict[str, list[Candidate]]] = {}  # server -> consumer -> own candidates
        self.candidate_fanout: dict[str, int] = {}
        self.learned: dict[str, Judgement] = {}
        self.final: dict[str, list[InferredEdge]] = {}
        everyone = index.ordered()
        self._ask({rule: {p.id for p in everyone} for rule in RULES})
        for p in everyone:
            self.reach.register(p)
            self._set_pre(p.id, {})
            self._set_post(p.id, Counter())
        if self.options.learned:
            for server, members in index.by_server.items():
                self._set_candidates(server, members)
            own = [c for by_consumer in self.candidates.values() for found in by_consumer.values() for c in found]
            whole = judge_candidates(
                own,
                (e for edges in self.pre.values() for e in edges),
                self._tool,
                index.server_sizes,
                self.options.learned_threshold,
                self.options.learned_veto,
            )
            edges, doubted = defaultdict(list), defaultdict(set)
            for e in whole.edges:
                edges[e.consumer].append(e)
            for pair in whole.doubted:
                doubted[pair[0]].add(pair)
            self.learned = {i: Judgement(edges.get(i, []), doubted.get(i, set())) for i in index.profiles}
        for i in index.profiles:
            self._finalize(i)

    # --- the change -------------------------------------------------------------------------------

    def apply(self, changed: Mapping[str, Tool], removed: Collection[str] = ()) -> dict[str, list[InferredEdge]]:
        """File a change (tools added or replaced, tools removed) and bring the edges up to date. Returns
        the edges, as they now stand, of every consumer whose edges were recomputed (a removed one: [])."""
        index = self.index
        index.own_namespaces()
        removed = {i for i in removed if i in index.profiles}
        changed = {i: t for i, t in changed.items() if i not in removed}
        if bool(self.catalogs) != self.filtering:  # the catalogs' filter starts or stops: everything changes
            self.stats["rebuild"] += 1
            tools = {i: p.tool for i, p in index.profiles.items() if i not in removed} | dict(changed)
            before = set(self.final)
            self._build(list(tools.values()))
            return {i: self.final.get(i, []) for i in before | set(self.final)}
        servers = {t.server_id for t in changed.values()} | {i.partition("::")[0] for i in removed}
        # a server whose catalog changed (the caller sets it; its tools may be unchanged): filed again
        regrouped = (
            {
                p.id
                for s, members in index.by_server.items()
                if index.groups[members[0].id] != self.catalogs.get(s, "")
                for p in members
            }
            - removed
            - changed.keys()
        )
        sizes = {s: index.server_sizes[s] for s in servers}
        old = {i: index.profiles[i] for i in (changed.keys() | removed) if i in index.profiles}
        fresh = {i: (t, self.catalogs.get(t.server_id, "")) for i, t in changed.items()}
        seen = self.reach.before(old, fresh, regrouped)
        for i, p in old.items():
            self.reach.unregister(p)
            index.discard(i)
        added = [index.add(t) for t in changed.values()]
        namespaces = index.settle_namespaces(added)
        for i in regrouped:
            index.regroup(i)
        for p in added:
            self.reach.register(p)
        asked = self.reach.after(seen, added, namespaces, regrouped, servers, self.rules, self.by_producer)
        self.stats.update(self.reach.wide)
        counts: Counter[tuple[str, str]] = Counter()  # fan-out counts touched, as they were
        feeders: dict[str, int] = {}  # feeder counts touched, as they were
        redo: set[str] = set()  # consumers whose final edges are recomputed
        for i in removed:
            self._drop(i, counts, feeders)
        renewed = self._ask({rule: ids - removed for rule, ids in asked.items()}) | set(changed)
        for i in renewed:
            self._set_pre(i, feeders)
        refilter = renewed | regrouped | set(changed)
        for producer_id in regrouped:
            refilter |= self.by_producer.get(producer_id, set())
        for i in refilter & index.profiles.keys():
            if self._set_post(i, counts):
                redo.add(i)
        cap = self.options.weak_fanout_cap
        for (producer, rule), count_before in counts.items():
            if (count_before > cap) != (self.fanout[producer, rule] > cap):  # the cap starts or stops counting
                self.stats["fan-out"] += 1
                redo |= self.by_producer.get(producer, set())
        for i, p in old.items():
            if i in changed and p.needs_input != index.profiles[i].needs_input:  # a hub now, or no more
                redo |= self.by_producer.get(i, set())
        if self.options.learned:
            redo |= self._rejudge(servers, sizes, set(old) | set(changed), renewed, feeders)
        present = redo & index.profiles.keys()
        for i in present:
            self._finalize(i)
        self.reached = len(set().union(*asked.values(), redo) | removed)
        return {i: self.final[i] for i in present} | {i: [] for i in removed}

    def set_declared(self, added: Iterable[tuple[str, str]], removed: Iterable[tuple[str, str]]) -> set[str]:
        """Declared pairs a manifest added or dropped; returns the consumers whose edges to recompute
        (``refresh``)."""
        added, removed = set(added) - self.declared, set(removed) & self.declared
        self.declared = (self.declared - removed) | added
        return {c for c, _ in added | removed}

    def refresh(self, ids: Iterable[str]) -> dict[str, list[InferredEdge]]:
        """Recompute the final edges of ``ids`` (after ``set_declared``)."""
        present = [i for i in ids if i in self.index.profiles]
        for i in present:
            self._finalize(i)
        return {i: self.final[i] for i in present}

    # --- internals ----------------------------------------------------------------------------------

    def _tool(self, tool_id: str) -> Tool | None:
        p = self.index.profiles.get(tool_id)
        return None if p is None else p.tool

    def _ask(self, asked: Mapping[str, set[str]]) -> set[str]:
        """Ask each rule again for its consumers; returns those whose edges from some rule changed."""
        renewed = set()
        for rule, ids in asked.items():
            consumers = self.index.ordered(ids)
            if not consumers:
                continue
            cutoffs: dict | None = {} if rule == "parameter" else None
            found: dict[str, list[InferredEdge]] = {p.id: [] for p in consumers}
            for e in RULES[rule](self.index, consumers, cutoffs):
                found[e.consumer].append(e)
            if cutoffs is not None:
                self.reach.cutoffs.update(cutoffs)
            for i, edges in found.items():
                mine = self.rules.setdefault(i, {})
                if mine.get(rule, []) != edges:
                    if edges:
                        mine[rule] = edges
                    else:
                        del mine[rule]
                    renewed.add(i)
        return renewed

    def _set_pre(self, i: str, feeders: dict[str, int]) -> None:
        """A consumer's rule edges in rule order, the reverse index and the feeder counts kept in step
        (``feeders`` gets each touched count as it was)."""
        old = self.pre.get(i, [])
        new = [e for rule in RULES for e in self.rules.get(i, {}).get(rule, ())]
        for sign, edges in ((-1, old), (1, new)):
            for e in edges:
                if feeds_own_server(e):
                    feeders.setdefault(e.producer, self.feeders[e.producer])
                    self.feeders[e.producer] += sign
        for p in {e.producer for e in old} - {e.producer for e in new}:
            _discard(self.by_producer, p, i)
        for e in new:
            self.by_producer[e.producer].add(i)
        self.pre[i] = new

    def _set_post(self, i: str, counts: Counter) -> bool:
        """The catalogs' filter over a consumer's rule edges, the fan-out counts kept in step (``counts``
        gets each touched count as it was); returns whether they changed."""
        catalogs = self.catalogs
        new = [e for e in self.pre[i] if kept_across(e, catalogs)] if self.filtering else self.pre[i]
        old = self.post.get(i)
        if old == new:
            return False
        for sign, edges in ((-1, old or ()), (1, new)):
            for e in edges:
                key = (e.producer, e.rule)
                counts.setdefault(key, self.fanout[key])
                self.fanout[key] += sign
        self.post[i] = new
        return True

    def _drop(self, i: str, counts: Counter, feeders: dict[str, int]) -> None:
        """Forget a removed consumer; its edges leave the reverse index and the counts."""
        self.rules.pop(i, None)
        self._set_pre(i, feeders)
        if i in self.post:
            self._set_post(i, counts)
            del self.post[i]
        del self.pre[i]
        self.learned.pop(i, None)
        self.final.pop(i, None)

    def _finalize(self, i: str) -> None:
        judgement = self.learned.get(i) or Judgement([], set())
        kept = sparsify_edges(self.post[i], self.options, self.declared, self.hubs, self.fanout)
        kept = [e for e in kept if not doubted(e, judgement)]
        final = with_learned(kept, judgement.edges, self.declared, self.options)
        self.final[i] = compete(final, self.options.max_producers_per_slot)

    # --- the learned model --------------------------------------------------------------------------

    def _set_candidates(self, server: str, members: list[Profile]) -> None:
        for producer in (p for by_consumer in self.candidates.get(server, {}).values() for p in by_consumer):
            self.candidate_fanout.pop(producer.producer_id, None)
        if not members:
            self.candidates.pop(server, None)
            return
        found = server_candidates([p.tool for p in members])
        by_consumer: dict[str, list[Candidate]] = defaultdict(list)
        for c in found:
            by_consumer[c.consumer_id].append(c)
        self.candidates[server] = dict(by_consumer)
        self.candidate_fanout.update(candidate_fanout(found))

    def _context(self) -> JudgeContext:
        feeders = self.feeders

        class _Feeders:
            def __contains__(self, p: object) -> bool:
                return feeders.get(p, 0) > 0  # type: ignore[call-overload]

        return JudgeContext(self.index.server_sizes, self.candidate_fanout, _Feeders(), self._tool)

    def _rejudge(
        self, servers: set[str], sizes: dict[str, int], changed: set[str], renewed: set[str], feeders: dict[str, int]
    ) -> set[str]:
        """Judge again every consumer whose judgement may have changed (the module doc); returns those whose
        judgement did."""
        index = self.index
        fanout_before = dict(self.candidate_fanout)
        for server in servers:
            self._set_candidates(server, index.by_server.get(server, []))
        # producers whose counts (or tool) the features read changed
        moved = set(changed)
        for server in servers:
            resized = sizes[server] != index.server_sizes[server]
            for p in index.by_server.get(server, ()):
                i = p.id
                if resized or fanout_before.get(i, 0) != self.candidate_fanout.get(i, 0):
                    moved.add(i)
        flipped = {p for p, n in feeders.items() if (n > 0) != (self.feeders[p] > 0)}
        judged = {p.id for s in servers for p in index.by_server.get(s, ())} | renewed
        for producer_id in moved | flipped:
            judged |= self.by_producer.get(producer_id, set())
        for producer_id in flipped:
            judged |= {q.id for q in index.by_server.get(producer_id.partition("::")[0], ())}
        context, redo = self._context(), set()
        for i in judged & index.profiles.keys():
            server = index.profiles[i].tool.server_id
            own = self.candidates.get(server, {}).get(i, [])
            judgement = judge_consumer(
                own, self.pre[i], context, self.options.learned_threshold, self.options.learned_veto
            )
            if judgement != self.learned.get(i):
                self.learned[i] = judgement
                redo.add(i)
        return redo


def _discard(sets: dict, key: str, item: str) -> None:
    found = sets.get(key)
    if found is not None:
        found.discard(item)
        if not found:
            del sets[key]


def edges_of(final: Mapping[str, list[InferredEdge]]) -> list[InferredEdge]:
    """Every consumer's edges, sorted as ``infer_dependencies`` returns them."""
    found = (e for edges in final.values() for e in edges)
    return sorted(found, key=lambda e: (e.consumer, e.producer, e.parameter or ""))


__all__ = ["IncrementalInference", "edges_of"]
