"""Learned same-server dependencies: every slot's candidate producers (pair_candidates.py) and the rules'
own proposals, judged by one logistic model learned from labels.

The rules (infer.py and its helpers) know a few patterns well; what they miss most on real servers is
the plainest one: a search, list, create or open tool whose results carry what another tool of the same
server takes (``search_papers`` -> ``get_paper(paper_id)``, ``kusto_cluster_list`` ->
``kusto_cluster_get(cluster)``, ``navigate`` before ``click``). Here each candidate pair of a slot is scored
by what the texts say and by what the rules said of it:

- the producer's action, the server's size, how many candidates compete for the slot and how many
  consumers the producer is a candidate for;
- whether the parameter's words appear in the producer's name, description and outputs, the rarity-weighted
  overlap of what the producer offers with the slot (and its rank among the slot's candidates), how much of
  the consumer's name and description the producer's name shares, whether the producer needs input;
- which rules proposed the pair and with what confidence, and how many rule proposals the slot has.

The weights (``pair_model.json``) are learned by ``benchmarks/labels/train_pairs.py`` from the labelled
catalogs (ToolLinkOS, LiveMCPBench, data/dependency-labels/), each weighing the same, and checked
leave-one-catalog-out; no tool, server or parameter name of any catalog is in them. Each slot keeps its best
candidate when its probability reaches ``threshold``, and that probability is the edge's confidence. A pair
the rules keep stays the rules' (their evidence explains it); a same-server pair the rules proposed but the
model gives less than ``veto`` in every slot it was proposed for is dropped (a hub's weak name match on a
large server: ``repo`` <- a listing of conflicting packages). Cross-server rule edges are never judged: only
ToolLinkOS labels them, so nothing left out of the training could check a model of them.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from toolkg.canonicalize.inference.pair_candidates import Candidate, candidates, identifying, words
from toolkg.canonicalize.inference.profiles import GENERIC_KEYS, PARAMETER_DIRECT, PARAMETER_INDIRECT, TOOL_DIRECT
from toolkg.models import InferredEdge, Tool
from toolkg.text.tool_words import IDENTIFYING_LEMMAS, VERBS, action_of
from toolkg.text.words import split_identifier

MODEL_PATH = Path(__file__).with_name("pair_model.json")
RULE = "learned-same-server"
THRESHOLD = 0.5  # a slot takes its best candidate when it is likelier right than wrong
VETO = 0.2  # a same-server rule pair the model gives less than this is dropped (chosen leave-one-catalog-out)
UNRANKED = 9  # the rank given a pair only a rule proposed
# The rules whose proposals are features (infer.py and its helpers).
RULES = (
    "output-to-parameter",
    "explicit-mention",
    "file-format",
    "namespace-authentication",
    "same-server-identifier",
    "session-opener",
    "rest-collection",
    "resource-precondition",
    "connectivity-precondition",
    "read-before-write",
    "enable-if-off",
)
_ACTIONS_ORDER = ("list", "search", "get", "create", "open")
FEATURES = (
    "log_server_size",
    *(f"producer_{a}" for a in _ACTIONS_ORDER),
    "consumer_get",
    "tool_level",
    "required",
    "log_competitors",
    "producer_needs_no_input",
    "parameter_in_producer_name",
    "parameter_in_producer_description",
    "parameter_in_producer_outputs",
    "parameter_description_overlap",
    "parameter_description_names_producer",
    "identifying",
    "consumer_description_names_producer",
    "consumer_description_shares_producer_name",
    "consumer_name_shares_producer_name",
    *(f"rule_{r}" for r in RULES),
    "rule_confidence",
    "rule_count",
    "no_rule",
    "same_server",
    "candidate",
    "log_producer_fanout",
    "parameter_generic",
    "log_slot_rule_proposals",
    "offer_score",
    "offer_share_of_best",
    "log_rank",
    "offers_about",
    "consumer_mentions_producer_object",
    "opener_hands_over_elsewhere",
)


class _ToolWords:
    """What the features read of a tool, computed once per tool (``tool_words``)."""

    __slots__ = (
        "name", "described", "outputs", "action", "needs_input", "lower_name", "lower_description", "object", "said"
    )  # fmt: skip

    def __init__(self, tool: Tool) -> None:
        self.name = words(tool.name)
        self.object = self.name - VERBS  # what the tool is about: open_presentation -> presentation
        self.described = words(tool.description)
        # everything the tool's text says: its description and its parameters' names and descriptions
        self.said = self.described.union(*(words(f"{x.name} {x.description}") for x in tool.parameters))
        self.outputs = frozenset().union(*(words(f"{o.name} {o.description}") for o in tool.outputs))
        self.action = action_of(tool.name)
        self.needs_input = any(p.required for p in tool.parameters)
        self.lower_name = tool.name.lower()
        self.lower_description = (tool.description or "").lower()


# A tool's words found by the Tool object's identity (a catalog held in memory passes the same objects
# again: a sync session judges a few consumers at a time); an entry keeps its tool, so its id stands.
_WORDS: dict[int, tuple[Tool, _ToolWords]] = {}
_WORDS_ENTRIES = 250_000


def tool_words(tool: Tool) -> _ToolWords:
    entry = _WORDS.get(id(tool))
    if entry is not None and entry[0] is tool:
        return entry[1]
    if len(_WORDS) >= _WORDS_ENTRIES:
        _WORDS.clear()
    found = _ToolWords(tool)
    _WORDS[id(tool)] = (tool, found)
    return found


def candidate_fanout(found: Iterable[Candidate]) -> Counter:
    """Consumers each producer is a slot candidate for (not rule proposals: a slot's features stay its
    server's)."""
    return Counter(p for p, _ in {(c.producer_id, c.consumer_id) for c in found if c.rank < UNRANKED})


def feeds_own_server(e: InferredEdge) -> bool:
    """A rule has the producer feeding a parameter of its own server (a login's session token)."""
    return e.parameter is not None and e.consumer.partition("::")[0] == e.producer.partition("::")[0]


def features(
    found: Sequence[Candidate],
    server_sizes: Mapping[str, int],
    proposed: dict | None = None,
    *,
    fanout: Mapping[str, int] | None = None,
    feeders: Container[str] | None = None,
) -> np.ndarray:
    """One row of ``FEATURES`` per candidate (each tool and parameter read once, however many candidates).
    ``proposed``: (consumer, producer, parameter) -> (the rules that proposed it, their best confidence).
    ``fanout`` (``candidate_fanout``) and ``feeders`` (producers some rule has feeding a parameter of their
    own server) are the catalog's: given when ``found`` is some consumers' only (incremental sync)."""
    proposed = proposed or {}
    competitors = Counter(c.slot for c in found)
    if fanout is None:
        fanout = candidate_fanout(found)
    rule_proposals = Counter((c, q) for (c, _, q) in proposed)
    # a producer the rules have feeding a parameter of its server (a login's session token): as a tool-level
    # prerequisite it is doubtful for a consumer that takes nothing from it
    fed = {(c, p) for (c, p, q) in proposed if q is not None and c.partition("::")[0] == p.partition("::")[0]}
    if feeders is None:
        feeders = {p for _, p in fed}
    slots: dict[tuple[str, str | None], tuple] = {}
    rows = np.zeros((len(found), len(FEATURES)))
    for n, c in enumerate(found):
        producer, consumer, parameter = c.producer, c.consumer, c.parameter
        p, q = tool_words(producer), tool_words(consumer)
        slot = c.slot
        if parameter is not None:
            if slot not in slots:
                named = words(parameter.name)
                slots[slot] = (named, named - IDENTIFYING_LEMMAS, words(parameter.description),
                               (parameter.description or "").lower(), float(identifying(parameter)),
                               float(all(w in GENERIC_KEYS for w in split_identifier(parameter.name))))  # fmt: skip
            named, about, said, lower_said, is_identifying, generic = slots[slot]
            by_parameter = (
                float(bool(about & p.name)),
                float(bool(about & p.described)),
                float(bool(named & p.outputs)),
                len(said & (p.name | p.described)) / (len(said) or 1),
                float(p.lower_name in lower_said),
                is_identifying,
            )
        else:
            by_parameter, generic = (0.0,) * 6, 0.0
        rules, confidence = proposed.get((c.consumer_id, c.producer_id, slot[1]), ((), 0.0))
        rows[n] = (
            math.log(server_sizes[producer.server_id]),
            *(float(p.action == a) for a in _ACTIONS_ORDER),
            float(q.action == "get"),
            float(parameter is None),
            float(bool(parameter and parameter.required)),
            math.log(1 + competitors[slot]),
            float(not p.needs_input),
            *by_parameter,
            float(p.lower_name in q.lower_description),
            len(q.described & p.name) / (len(p.name) or 1),
            len(q.name & p.name) / (len(q.name) or 1),
            *(float(r in rules) for r in RULES),
            confidence,
            len(rules),
            float(not rules),
            float(consumer.server_id == producer.server_id),
            float(c.rank < UNRANKED),
            math.log1p(fanout.get(c.producer_id, 0)),
            generic,
            math.log1p(rule_proposals[slot]),
            c.score,
            c.share,
            math.log1p(c.rank),
            float(c.offers_about),
            len(p.object & q.said) / (len(p.object) or 1),
            float(parameter is None and c.producer_id in feeders and (c.consumer_id, c.producer_id) not in fed),
        )
    return rows


def judged(tools: Sequence[Tool], rule_edges: Iterable[InferredEdge]) -> tuple[list[Candidate], dict]:
    """Every candidate the model judges: each slot's own candidates, and every pair a rule proposed (with the
    rules that did and their best confidence, keyed by (consumer, producer, parameter))."""
    by_id = {t.id: t for t in tools}
    proposed = proposals(rule_edges)
    found = candidates(tools)
    return found + _unranked(found, proposed, by_id.get), proposed


def proposals(rule_edges: Iterable[InferredEdge]) -> dict[tuple[str, str, str | None], tuple[frozenset[str], float]]:
    """(consumer, producer, parameter) -> (the rules that proposed it, their best confidence)."""
    proposed: dict[tuple[str, str, str | None], tuple[frozenset[str], float]] = {}
    for e in rule_edges:
        key = (e.consumer, e.producer, e.parameter)
        rules, confidence = proposed.get(key, (frozenset(), 0.0))
        proposed[key] = (rules | {e.rule}, max(confidence, e.confidence))
    return proposed


def _unranked(found: Sequence[Candidate], proposed: dict, tool: Callable[[str], Tool | None]) -> list[Candidate]:
    """A candidate for every proposed pair that is no slot's own candidate."""
    seen = {(c.consumer_id, c.producer_id, c.slot[1]) for c in found}
    out = []
    # sorted: a set's order changes with the hash seed, and the first of two equal candidates wins its slot
    for consumer_id, producer_id, parameter_name in sorted(
        proposed.keys() - seen, key=lambda k: (k[0], k[1], k[2] or "")
    ):
        consumer, producer = tool(consumer_id), tool(producer_id)
        if consumer is None or producer is None:
            continue
        parameter = next((x for x in consumer.parameters if x.name == parameter_name), None)
        if parameter_name is not None and parameter is None:
            continue
        out.append(Candidate(consumer, producer, parameter, rank=UNRANKED))
    return out


@cache
def load_weights(path: str = str(MODEL_PATH)) -> tuple[float, ...]:
    """The shipped weights (``FEATURES`` order, bias last)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return tuple(float(data["weights"][name]) for name in (*FEATURES, "bias"))


def probabilities(rows: np.ndarray, weights: Sequence[float]) -> np.ndarray:
    # Each row summed on its own (not a matrix product, whose rounding depends on how many rows it is
    # given): a consumer judged alone (incremental sync) scores exactly as in the whole catalog.
    z = (rows * np.asarray(weights[:-1])).sum(axis=1) + weights[-1]
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0)))


def decide(
    found: Sequence[Candidate], p: Sequence[float], proposed: dict, threshold: float, veto: float
) -> tuple[dict, set[tuple[str, str]]]:
    """The model's decisions from its probabilities: slot -> (probability, candidate) of each slot's likeliest
    same-server candidate at or above ``threshold``, and the same-server rule pairs every proposal of which
    scores under ``veto``."""
    best: dict[tuple[str, str | None], tuple[float, Candidate]] = {}
    pair_best: dict[tuple[str, str], float] = {}
    for c, score in zip(found, p, strict=True):
        same = c.consumer.server_id == c.producer.server_id
        if score >= threshold and (c.slot not in best or score > best[c.slot][0]):
            best[c.slot] = (score, c)
        if same and (c.consumer_id, c.producer_id, c.slot[1]) in proposed:
            pair = (c.consumer_id, c.producer_id)
            pair_best[pair] = max(score, pair_best.get(pair, 0.0))
    # a rule's cross-server proposal may win its slot; it stays the rule's
    best = {slot: (score, c) for slot, (score, c) in best.items() if c.consumer.server_id == c.producer.server_id}
    return best, {pair for pair, score in pair_best.items() if score < veto}


@dataclass(frozen=True)
class Judgement:
    """What the model says of a catalog's candidates: the edges it adds, and the same-server rule pairs it
    doubts (every proposal of the pair scored under ``veto``)."""

    edges: list[InferredEdge]
    doubted: set[tuple[str, str]]


def judge(
    tools: Sequence[Tool],
    rule_edges: Iterable[InferredEdge],
    threshold: float = THRESHOLD,
    veto: float = VETO,
    weights: Sequence[float] | None = None,
    servers: set[str] | None = None,
) -> Judgement:
    """One edge per slot whose likeliest candidate reaches ``threshold``, and the doubted rule pairs.
    ``rule_edges`` are the rules' edges before sparsification; the caller drops an added edge whose pair the
    rules keep. ``servers`` keeps only those servers' tools (a proposal from a tool of another server is then
    left out); ``judge_consumer`` judges one consumer as the whole catalog would."""
    if servers is not None:
        tools = [t for t in tools if t.server_id in servers]
    by_id = {t.id: t for t in tools}
    sizes = Counter(t.server_id for t in tools)
    return judge_candidates(candidates(tools), rule_edges, by_id.get, sizes, threshold, veto, weights)


def judge_candidates(
    own: list[Candidate],
    rule_edges: Iterable[InferredEdge],
    tool: Callable[[str], Tool | None],
    server_sizes: Mapping[str, int],
    threshold: float = THRESHOLD,
    veto: float = VETO,
    weights: Sequence[float] | None = None,
) -> Judgement:
    """``judge`` given every slot's own candidates (``candidates`` of the catalog, in order) and a tool by id."""
    proposed = proposals(rule_edges)
    found = own + _unranked(own, proposed, tool)
    if not found:
        return Judgement([], set())
    p = probabilities(features(found, server_sizes, proposed), weights or load_weights()).tolist()
    best, doubted = decide(found, p, proposed, threshold, veto)
    return Judgement(_learned_edges(best, proposed), doubted)


@dataclass(frozen=True)
class JudgeContext:
    """What a consumer's features read of the rest of the catalog (``judge_consumer``): server sizes, each
    producer's ``candidate_fanout`` on its server, and the producers some rule has feeding a parameter of
    their own server."""

    server_sizes: Mapping[str, int]
    fanout: Mapping[str, int]
    feeders: Container[str]
    tool: Callable[[str], Tool | None]  # a tool of the catalog by id


def judge_consumer(
    own: Sequence[Candidate],
    rule_edges: Iterable[InferredEdge],
    context: JudgeContext,
    threshold: float = THRESHOLD,
    veto: float = VETO,
    weights: Sequence[float] | None = None,
) -> Judgement:
    """``judge`` for one consumer: its slots' own candidates (its part of ``candidates``, in order) and the
    rules' edges into it; the judgement the whole catalog's ``judge`` gives that consumer."""
    proposed = proposals(rule_edges)
    found = [*own, *_unranked(own, proposed, context.tool)]
    if not found:
        return Judgement([], set())
    rows = features(found, context.server_sizes, proposed, fanout=context.fanout, feeders=context.feeders)
    p = probabilities(rows, weights or load_weights()).tolist()
    best, doubted = decide(found, p, proposed, threshold, veto)
    return Judgement(_learned_edges(best, proposed), doubted)


def _learned_edges(best: dict, proposed: dict) -> list[InferredEdge]:
    edges = []
    for (_, parameter), (score, c) in sorted(best.items(), key=lambda x: (x[0][0], x[0][1] or "")):
        rules = sorted(proposed.get((c.consumer_id, c.producer_id, parameter), ((), 0.0))[0])
        action = action_of(c.producer.name)
        if c.parameter is None:
            kind, evidence = TOOL_DIRECT, f"{c.producer.name} ({action}) comes first on its server"
        else:
            kind = PARAMETER_DIRECT if c.parameter.required else PARAMETER_INDIRECT
            evidence = f"{parameter} <- what {c.producer.name} ({action}) returns on the same server"
        if rules:
            evidence += f"; proposed by {', '.join(rules)}"
        edges.append(
            InferredEdge(
                consumer=c.consumer_id,
                producer=c.producer_id,
                kind=kind,
                parameter=parameter,
                confidence=round(score, 2),
                rule=RULE,
                evidence=evidence,
            )
        )
    return edges
