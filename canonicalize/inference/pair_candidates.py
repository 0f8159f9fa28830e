"""Producer -> consumer candidates for the learned dependency model (pairs.py): generous, and bounded.

Every *slot* of a server gets a few candidates from its own server:

- A slot is a consumer's parameter that a value from another tool can fill: one that identifies something
  (``*_id``, ``name``, ``path``, ``symbol``...) or a required one that names what it takes (``cluster``,
  ``database``; a ``query`` or ``text`` is the user's to write), never a boolean, an enumeration (a value
  chosen from a fixed list) or where an output is written. A consumer on a small server (tools written to be
  used together) also has a tool-level slot that the server's open/login tools can fill.
- A candidate producer is a tool of the same server that lists, searches, gets, creates or opens something.
  It is ranked for the slot by what it offers (the words of its name and its declared outputs) against what
  the slot is about (the parameter's own words, worth twice) and the consumer's entity (its name's words
  without the verb), each word weighed by its rarity among the server's producers (idf): so
  ``kusto_cluster_get(cluster)`` meets ``kusto_cluster_list`` before ``aks_cluster_list``. A slot that
  names what it takes (``session_id`` is about a session) only takes producers that offer it.
- On a small server an identifying slot that names nothing (``id``, ``path``) meets every producer; any slot
  keeps its best ``SMALL_TOP`` by that score on a small server and ``TOP`` on a larger one, so the cost grows
  with the tools, not with their square.

The score, its share of the slot's best and the rank go to the model as features, beside the texts' own.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

from toolkg.canonicalize.inference.profiles import GENERIC_KEYS, is_destination
from toolkg.models import Parameter, Tool
from toolkg.text.lexicon import STOP_WORDS
from toolkg.text.tool_words import IDENTIFYING, IDENTIFYING_LEMMAS, VERBS, action_of
from toolkg.text.words import lemma, split_identifier

SMALL_SERVER = 60  # tools written to be used together: an identifying slot meets every producer
TOP = 5  # candidates a slot of a larger server keeps, best first
SMALL_TOP = 10  # and of a small server
DESCRIPTION_CHARACTERS = 400  # of a description read for its words
_GENERIC_LEMMAS = frozenset(lemma(w) for w in GENERIC_KEYS)


def words(text: str | None, limit: int = DESCRIPTION_CHARACTERS) -> frozenset[str]:
    """Lemmas of a text's content words (identifiers split)."""
    return _words((text or "")[:limit])


@cache
def _words(text: str) -> frozenset[str]:
    return frozenset(lemma(w) for w in split_identifier(text) if len(w) > 1 and w not in STOP_WORDS)


def identifying(parameter: Parameter) -> bool:
    parts = split_identifier(parameter.name)
    return bool(parts) and (parts[-1] in IDENTIFYING or parameter.name.lower().endswith("id"))


def _said(tool: Tool) -> frozenset[str]:
    """Everything a tool's text says: its description and its parameters' names and descriptions."""
    return words(tool.description).union(*(words(f"{x.name} {x.description}") for x in tool.parameters))


def is_slot(parameter: Parameter, tool_name: str) -> bool:
    """Whether another tool's result can fill the parameter (a fixed choice or a place to write cannot)."""
    if parameter.json_type == "boolean" or parameter.enum or is_destination(tool_name, parameter.name):
        return False
    # a required parameter that names nothing (a query, a text, a message) is the user's to write
    return identifying(parameter) or (parameter.required and bool(about(parameter)))


def about(parameter: Parameter) -> frozenset[str]:
    """What a parameter is about: its words without generic and identifying ones (``paper_id`` -> paper)."""
    return words(parameter.name) - _GENERIC_LEMMAS - IDENTIFYING_LEMMAS


@dataclass(frozen=True, slots=True)
class Candidate:
    consumer: Tool
    producer: Tool
    parameter: Parameter | None  # None: a tool-level prerequisite
    score: float = 0.0  # idf-weighted overlap of what the producer offers with the slot
    share: float = 0.0  # score / the slot's best score
    rank: int = 0  # 0 = the slot's best
    offers_about: bool = False  # the producer offers what the parameter is about
    # the ids, read once (a tool's id is computed; hundreds of thousands of candidates read them many times)
    consumer_id: str = field(init=False)
    producer_id: str = field(init=False)
    slot: tuple[str, str | None] = field(init=False)  # (consumer id, parameter name or None)

    def __post_init__(self) -> None:
        consumer_id = self.consumer.id
        object.__setattr__(self, "consumer_id", consumer_id)
        object.__setattr__(self, "producer_id", self.producer.id)
        object.__setattr__(self, "slot", (consumer_id, self.parameter.name if self.parameter else None))


def candidates(tools: Sequence[Tool]) -> list[Candidate]:
    """Every slot's same-server candidates, best first within a slot."""
    by_server: dict[str, list[Tool]] = defaultdict(list)
    for tool in tools:
        by_server[tool.server_id].append(tool)
    out: list[Candidate] = []
    for server_tools in by_server.values():
        out += server_candidates(server_tools)
    return out


def server_candidates(server_tools: Sequence[Tool]) -> list[Candidate]:
    """One server's part of ``candidates`` (its tools in catalog order): it reads nothing else."""
    actions = {t.id: action_of(t.name) for t in server_tools}
    producers = {t.id: t for t in server_tools if actions[t.id] != "other"}
    if not producers:
        return []
    offered = {i: words(t.name) | frozenset().union(*(words(o.name) for o in t.outputs)) for i, t in producers.items()}
    spread = Counter(w for offer in offered.values() for w in offer)
    idf = {w: math.log((len(producers) + 1) / (n + 0.5)) for w, n in spread.items()}
    postings: dict[str, list[str]] = defaultdict(list)
    for producer_id, offer in offered.items():
        for w in offer:
            postings[w].append(producer_id)
    small = len(server_tools) <= SMALL_SERVER
    opened = {i: words(t.name) - VERBS for i, t in producers.items()}  # what an opener opens
    said = {t.id: _said(t) for t in server_tools} if small else {}
    # a server's boilerplate ("this tool belongs to the vehicle control system, which controls the engine,
    # doors...") names everything for every tool: words most of its tools say tell no tool apart
    boilerplate = {w for w, n in Counter(w for x in said.values() for w in x).items() if n > len(server_tools) / 2}
    out: list[Candidate] = []
    for consumer in server_tools:
        entity = words(consumer.name) - VERBS
        for parameter in consumer.parameters:
            if not is_slot(parameter, consumer.name):
                continue
            named = about(parameter)
            scores: dict[str, float] = defaultdict(float)
            for w in named:
                for producer_id in postings.get(w, ()):
                    scores[producer_id] += 2 * idf[w]
            for w in entity:
                for producer_id in postings.get(w, ()):
                    scores[producer_id] += idf[w]
            scores.pop(consumer.id, None)
            if named:  # a slot that names what it takes: only producers that offer it
                scores = {i: s for i, s in scores.items() if named & offered[i]}
            elif small and identifying(parameter):
                for producer_id in producers:
                    if producer_id != consumer.id:
                        scores.setdefault(producer_id, 0.0)
            ranked = sorted(scores.items(), key=lambda x: (-x[1], x[0]))
            ranked = ranked[: TOP if not small else SMALL_TOP]
            best = ranked[0][1] if ranked else 0.0
            out += [
                Candidate(
                    consumer,
                    producers[producer_id],
                    parameter,
                    score=score,
                    share=score / best if best else 0.0,
                    rank=rank,
                    offers_about=bool(named & offered[producer_id]),
                )
                for rank, (producer_id, score) in enumerate(ranked)
            ]
        if small:  # an opener comes first for the tools whose text names what it opens (or it names nothing)
            names = (said[consumer.id] - boilerplate) | entity
            out += [
                Candidate(consumer, producer, None)
                for producer_id, producer in producers.items()
                if producer_id != consumer.id
                and actions[producer_id] == "open"
                and (not opened[producer_id] or opened[producer_id] & names)
            ]
    return out
