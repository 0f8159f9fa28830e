"""Learned same-server dependencies: the producer -> consumer pairs no rule judged, scored by a model learned
from labels.

The rules (inference.py and its helpers) know a few patterns well. What they miss most on real servers is
the plainest one: a search, list, create or open tool of a server whose results carry what another tool of
the same server takes (``search_papers`` -> ``get_paper(paper_id)``, ``navigate`` before ``click``). Here:

1. **Candidates, generously.** Every *open slot* (a consumer's parameter, or the consumer itself for a
   tool-level prerequisite) that no rule proposed a producer for gets, as candidates, the tools of its own
   server that search, list, get, create or open something. A slot is a parameter that identifies something
   (``*_id``, ``name``, ``path``, ``symbol``...) or, on a server small enough that its tools are written to be
   used together, any required parameter. On a large server a candidate must also name, in its name or
   outputs, what the parameter is about (a word rare among the server's tool names); for a parameter that
   identifies nothing, what the parameter or its tool is about.
2. **Judgement, learned.** Each candidate is scored by a logistic model over what the texts say: the
   producer's action, how many candidates compete for the slot, the server's size, whether the parameter's
   words appear in the producer's name, description and outputs, how much of the consumer's name and
   description the producer's name shares, whether the producer needs input. The weights
   (``pair_model.json``) are learned from the labelled catalogs by ``benchmarks/labels/train_pairs.py``,
   leave-one-catalog-out checked; no tool, server or parameter name of any catalog is in them.
3. A pair the rules already link gets no second edge. Each open slot keeps its best candidate when the
   model's probability reaches ``threshold``; its confidence is that probability.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from toolkg.canonicalize.profiles import (
    GENERIC_KEYS,
    IDENTIFIER_SUFFIXES,
    PARAMETER_DIRECT,
    PARAMETER_INDIRECT,
    TOOL_DIRECT,
)
from toolkg.models import InferredEdge, Parameter, Tool
from toolkg.text.lexicon import STOP_WORDS
from toolkg.text.words import lemma, split_identifier

MODEL_PATH = Path(__file__).with_name("pair_model.json")
RULE = "learned-same-server"
THRESHOLD = 0.5  # a slot takes its best candidate from this probability on
SMALL_SERVER = 60  # tools written to be used together: every required parameter is a slot
DESCRIPTION_CHARACTERS = 400  # of a description read for its words
# The action a tool's name starts (or contains): general English verbs of tool names, by what they yield.
_ACTIONS = {
    "list": "list enumerate",
    "search": "search find query lookup look browse discover searcher finder",
    "get": "get fetch read retrieve show view describe getter inspect",
    "create": "create add new generate make insert upload post put",
    "open": "open navigate connect login log launch start init initialize begin load think authenticate signin",
}
ACTION = {word: action for action, words in _ACTIONS.items() for word in words.split()}
# Last words of a parameter that identifies something another tool can hand over.
IDENTIFYING = frozenset(IDENTIFIER_SUFFIXES) | frozenset(
    "sha slug number uri url path file filename hash pid uuid index title symbol ticker identifier ref label tag "
    "version account channel user owner repo repository branch package packages ids".split()
)
FEATURES = (
    "log_server_size",
    "producer_list",
    "producer_search",
    "producer_get",
    "producer_create",
    "producer_open",
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
)


def words(text: str | None, limit: int = DESCRIPTION_CHARACTERS) -> frozenset[str]:
    """Lemmas of a text's content words (identifiers split)."""
    return _words((text or "")[:limit])


@cache
def _words(text: str) -> frozenset[str]:
    return frozenset(lemma(w) for w in split_identifier(text) if len(w) > 1 and w not in STOP_WORDS)


def action_of(name: str) -> str:
    """The first action word of a tool name (``search_papers`` -> search), or ``other``."""
    return next((ACTION[w] for w in split_identifier(name) if w in ACTION), "other")


@dataclass(frozen=True)
class Candidate:
    consumer: Tool
    producer: Tool
    parameter: Parameter | None  # None: a tool-level prerequisite


def _identifying(parameter: Parameter) -> bool:
    parts = split_identifier(parameter.name)
    return bool(parts) and (parts[-1] in IDENTIFYING or parameter.name.lower().endswith("id"))


def candidates(
    tools: Sequence[Tool], taken: set[tuple[str, str | None]], linked: set[tuple[str, str]] = frozenset()
) -> list[Candidate]:
    """The same-server candidates of every open slot: (consumer, parameter) pairs not in ``taken``; a
    (consumer, producer) pair the rules already ``linked`` gets no second edge."""
    by_server: dict[str, list[tuple[str, Tool]]] = defaultdict(list)
    for tool in tools:
        by_server[tool.server_id].append((tool.id, tool))
    out: list[Candidate] = []
    for server_tools in by_server.values():
        actions = {tool_id: action_of(tool.name) for tool_id, tool in server_tools}
        producers = [(tool_id, tool) for tool_id, tool in server_tools if actions[tool_id] != "other"]
        if not producers:
            continue
        small = len(server_tools) <= SMALL_SERVER
        named = {tool_id: words(tool.name) for tool_id, tool in server_tools}
        offered = {i: named[i] | frozenset().union(*(words(o.name) for o in t.outputs)) for i, t in producers}
        spread = Counter(w for tool_id, _ in server_tools for w in named[tool_id])
        common = {w for w, n in spread.items() if n > max(5, 0.05 * len(server_tools))}
        for consumer_id, consumer in server_tools:
            for parameter in consumer.parameters:
                if (consumer_id, parameter.name) in taken:
                    continue
                identifying = _identifying(parameter)
                if not identifying and not (small and parameter.required):
                    continue
                about = {lemma(w) for w in split_identifier(parameter.name) if w not in GENERIC_KEYS}
                about -= IDENTIFYING
                # a catalog-sized server, or a parameter that identifies nothing: only producers of what it is about
                wanted = about - common if not small else (None if identifying else about | named[consumer_id])
                for producer_id, producer in producers:
                    if producer_id == consumer_id or (consumer_id, producer_id) in linked:
                        continue
                    if wanted is not None and not wanted & offered[producer_id]:
                        continue
                    out.append(Candidate(consumer, producer, parameter))
            if small and (consumer_id, None) not in taken:
                out += [
                    Candidate(consumer, producer, None)
                    for producer_id, producer in producers
                    if producer_id != consumer_id
                    and actions[producer_id] == "open"
                    and (consumer_id, producer_id) not in linked
                ]
    return out


@dataclass(frozen=True)
class _ToolWords:
    """What the features read of a tool, computed once per tool."""

    name: frozenset[str]
    described: frozenset[str]
    outputs: frozenset[str]
    action: str
    needs_input: bool
    lower_name: str
    lower_description: str


def _tool_words(tool: Tool) -> _ToolWords:
    return _ToolWords(
        name=words(tool.name),
        described=words(tool.description),
        outputs=frozenset().union(*(words(f"{o.name} {o.description}") for o in tool.outputs)),
        action=action_of(tool.name),
        needs_input=any(p.required for p in tool.parameters),
        lower_name=tool.name.lower(),
        lower_description=(tool.description or "").lower(),
    )


_IDENTIFYING_LEMMAS = frozenset(lemma(w) for w in IDENTIFYING)
_ACTIONS_ORDER = ("list", "search", "get", "create", "open")


def features(found: Sequence[Candidate], server_sizes: Counter) -> np.ndarray:
    """One row of ``FEATURES`` per candidate (each tool and parameter read once, however many candidates)."""
    competitors = Counter((c.consumer.id, c.parameter.name if c.parameter else None) for c in found)
    tools: dict[str, _ToolWords] = {}
    slots: dict[tuple[str, str], tuple] = {}
    rows = np.zeros((len(found), len(FEATURES)))
    for n, c in enumerate(found):
        producer, consumer, parameter = c.producer, c.consumer, c.parameter
        if producer.id not in tools:
            tools[producer.id] = _tool_words(producer)
        if consumer.id not in tools:
            tools[consumer.id] = _tool_words(consumer)
        p, q = tools[producer.id], tools[consumer.id]
        if parameter is not None:
            key = (consumer.id, parameter.name)
            if key not in slots:
                named = words(parameter.name)
                slots[key] = (named, named - _IDENTIFYING_LEMMAS, words(parameter.description),
                              (parameter.description or "").lower(), float(_identifying(parameter)))  # fmt: skip
            named, about, said, lower_said, identifying = slots[key]
            by_parameter = (
                float(bool(about & p.name)),
                float(bool(about & p.described)),
                float(bool(named & p.outputs)),
                len(said & (p.name | p.described)) / (len(said) or 1),
                float(p.lower_name in lower_said),
                identifying,
            )
        else:
            by_parameter = (0.0,) * 6
        rows[n] = (
            math.log(server_sizes[producer.server_id]),
            *(float(p.action == a) for a in _ACTIONS_ORDER),
            float(q.action == "get"),
            float(parameter is None),
            float(bool(parameter and parameter.required)),
            math.log(1 + competitors[consumer.id, parameter.name if parameter else None]),
            float(not p.needs_input),
            *by_parameter,
            float(p.lower_name in q.lower_description),
            len(q.described & p.name) / (len(p.name) or 1),
            len(q.name & p.name) / (len(q.name) or 1),
        )
    return rows


@cache
def load_weights(path: str = str(MODEL_PATH)) -> tuple[float, ...]:
    """The shipped weights (``FEATURES`` order, bias last)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return tuple(float(data["weights"][name]) for name in (*FEATURES, "bias"))


def probabilities(rows: np.ndarray, weights: Sequence[float]) -> np.ndarray:
    z = rows @ np.asarray(weights[:-1]) + weights[-1]
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0)))


def learned_edges(
    tools: Sequence[Tool],
    rule_edges: Iterable[InferredEdge],
    threshold: float = THRESHOLD,
    weights: Sequence[float] | None = None,
) -> list[InferredEdge]:
    """One edge per open slot whose best candidate reaches ``threshold`` (the rules' slots stay theirs)."""
    rule_edges = list(rule_edges)
    taken = {(e.consumer, e.parameter) for e in rule_edges}
    found = candidates(tools, taken, {(e.consumer, e.producer) for e in rule_edges})
    if not found:
        return []
    weights = weights or load_weights()
    server_sizes = Counter(t.server_id for t in tools)
    best: dict[tuple[str, str | None], tuple[float, Candidate]] = {}
    for candidate, p in zip(found, probabilities(features(found, server_sizes), weights).tolist(), strict=True):
        slot = (candidate.consumer.id, candidate.parameter.name if candidate.parameter else None)
        if p >= threshold and (slot not in best or p > best[slot][0]):
            best[slot] = (p, candidate)
    edges = []
    for (_, parameter), (p, c) in sorted(best.items(), key=lambda x: (x[0][0], x[0][1] or "")):
        if c.parameter is None:
            kind, evidence = TOOL_DIRECT, f"{c.producer.name} ({action_of(c.producer.name)}) comes first on its server"
        else:
            kind = PARAMETER_DIRECT if c.parameter.required else PARAMETER_INDIRECT
            action = action_of(c.producer.name)
            evidence = f"{parameter} <- what {c.producer.name} ({action}) returns on the same server"
        edges.append(
            InferredEdge(
                consumer=c.consumer.id,
                producer=c.producer.id,
                kind=kind,
                parameter=parameter,
                confidence=round(p, 2),
                rule=RULE,
                evidence=evidence,
            )
        )
    return edges
