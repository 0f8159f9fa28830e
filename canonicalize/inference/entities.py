"""Entity types that meet across spellings: one key for each thing the tools of a server name (issue 51).

A server's tools name the thing they handle in many places, each spelled its own way: ``repo_id`` and
``list_repositories``, ``org`` and ``organization``, a ``$ref`` to ``order-summary-object``, ``GET
/pets/{id}``. The typed join (``typed_join.py``) files its producers and looks its slots up by the keys made
here, in this order:

1. **Words**: short forms the lexicon spells out, the head lemmatised (``canonical_key``: ``repos`` ->
   repository), digits dropped.
2. **A ``$ref`` component's name**: its words less the ones that say only what shape or part of the API it is
   (``order-summary-object`` -> order, ``issue-search-result-item`` -> issue, ``nullable-simple-user`` -> user).
3. **A route's path segment**: the collection a path parameter sits under (``{id}`` in ``/pets/{id}`` is a pet)
   and the collection a ``GET`` route ends in (``GET /users/{user}/repos`` lists repositories).
4. **Short forms a server learns for itself** (``ServerEntities``): a word of a server's entities that is the
   start of a longer word of that server's entities (``spec`` / ``specification``), or whose consonants follow
   the longer one's in order (``msg`` / ``message``, ``pkg`` / ``package``), when the short word is no English
   word of its own (``pass`` / ``password`` is no short form) and the rest is none either (``user`` /
   ``username`` is a compound). Learned per server: what ``app`` means is the server's business.
5. **Similar labels, for the rest**: a slot whose entity no producer yields takes the producers of the entity
   whose label's embedding (the shipped MiniLM model) is closest, at cosine ``SIMILAR`` or more, among the
   entities of its own server; never across servers, never a label the other only adds words to.

Nothing here is stored: every merge is per server and made again each run (reversible as the entity
clusters of ``canonicalize/entities`` are, by not being written into the tools' graphs), and each edge's
evidence says which spellings met and how.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

import numpy as np

from toolkg.canonicalize.inference.profiles import canonical_key
from toolkg.text.lexicon import GENERIC_NOUNS, STOP_WORDS
from toolkg.text.words import lemma, lemma_table, split_identifier

# Words of a schema component's name that say what shape or part of the API it is, not what it is about
# (general API-description conventions: openapi-generator's, Swagger's and GitHub's naming).
SCHEMA_SHAPE_WORDS = frozenset(
    """
    object schema model dto entity resource response request req res result results item items summary simple
    full detail details data info entry record list page paged paginated collection minimal nullable base public
    wrapper payload body envelope output input view type array map set ref reference
    """.split()
)
SIMILAR = 0.8  # cosine of two entity labels' embeddings that makes them one entity (movie / film 0.84; city /
# country 0.54, start date / end date 0.64, customer / client 0.61: only near-synonyms and spelling variants pass)
SHORT_FORM = 0.5  # cosine a short form's reading needs (repo / repository 0.71, spec / specification 0.59; author /
# authorization 0.29, ssh / snapshot 0.31, temp / template 0.19: a spelling that fits but a meaning that does not)
MAX_SIMILAR_LABELS = 400  # labels a server embeds at most for step 5: past it, step 5 is skipped for that server
# (GitHub's 1,223 operations yield 1,059 labels: 7 s to embed on 2 cores, for one more candidate)
_PARAMETER = re.compile(r"^\{[^{}]+\}$")
_VOWELS = frozenset("aeiouy")
MIN_SHORT = 2  # letters of a learned short form at least (db), and the long form this many more
MIN_PREFIX = 3  # a short form read as a prefix has at least this many letters (org, app, spec)
# Endings that make a word of a word (tag -> tagging, run -> runner): what is left after a real word's start
_ENDINGS = tuple(
    "s es ed er ers ing ings ment ments ness ion ions able ible al ly ity ive ist ism ure ance ence ship".split()
)
# ...unless more of the word is left than the ending (spec -> specification, config -> configuration)
_LONG_ENDINGS = ("ation", "ations", "ition", "ment", "ments", "ory", "ure")


def entity_key(words: Iterable[str]) -> tuple[str, ...]:
    """Step 1: the words as one key (``('repo', 'paths')`` -> ``('repository', 'path')``)."""
    return canonical_key(w for w in words if not w.isdigit())


def schema_entity(component: str | None) -> tuple[str, ...]:
    """Step 2: the entity a ``$ref`` component names; () when it names only a shape (``Response``)."""
    if not component:
        return ()
    words = [w for w in split_identifier(component) if w not in SCHEMA_SHAPE_WORDS and not w.isdigit()]
    return entity_key(words)


def _segments(route: str | None) -> tuple[str, list[str]]:
    method, _, path = (route or "").partition(" ")
    return method.upper(), [s for s in path.split("/") if s]


def collection_of(route: str | None, parameter: str) -> tuple[str, ...]:
    """Step 3, for a slot: the collection a path parameter sits under (``{id}`` of ``GET /pets/{id}`` -> pet)."""
    _, segments = _segments(route)
    for at, segment in enumerate(segments):
        if segment == "{" + parameter + "}" and at > 0 and not _PARAMETER.match(segments[at - 1]):
            return entity_key(split_identifier(segments[at - 1]))
    return ()


def route_lists(route: str | None) -> set[tuple[str, ...]]:
    """Step 3, for a producer: the collections a ``GET`` route ends in, each segment after its last parameter
    (``GET /users/{user}/repos`` -> repository; ``GET /articles/recent`` -> article, recent); none for a route
    that ends in a parameter (one item) or is no ``GET``."""
    method, segments = _segments(route)
    if method != "GET" or not segments or _PARAMETER.match(segments[-1]):
        return set()
    tail = []
    for segment in reversed(segments):
        if _PARAMETER.match(segment):
            break
        tail.append(segment)
    return {entity_key(words) for s in tail if len(words := split_identifier(s)) <= 3} - {()}


@lru_cache(maxsize=1)
def _english() -> frozenset[str]:
    """Words English has: the lemma table's forms and lemmas (a short form is none of them: repo, msg, pkg)."""
    table = lemma_table()
    return frozenset(table) | frozenset(table.values()) | STOP_WORDS | GENERIC_NOUNS


def abbreviates(short: str, long: str) -> bool:
    """Whether ``short`` reads as a short form of ``long``: its start, when what is left is no word and no
    ending (``spec``/``specification``, but not ``user``/``username``, ``log``/``login``, ``tag``/``tagging``),
    or its first letter and then only consonants that follow in ``long`` in order (``msg``, ``pkg``, ``db``)."""
    if len(short) < MIN_SHORT or len(long) < len(short) + MIN_SHORT or short[0] != long[0] or not short.isalpha():
        return False
    if long.startswith(short):
        rest = long[len(short) :]
        if len(short) < MIN_PREFIX or rest in _english():
            return False
        return not rest.endswith(_ENDINGS) or (len(rest) > 4 and rest.endswith(_LONG_ENDINGS))
    letters = iter(long[1:])
    return all(c not in _VOWELS for c in short[1:]) and all(c in letters for c in short[1:])


class ServerEntities:
    """Steps 4 and 5 for one server: its entities' short forms spelled out, and labels that mean the same."""

    def __init__(self, keys: Iterable[tuple[str, ...]]) -> None:
        keys = {k for k in keys if k}
        words = {w for key in keys for w in key}
        longer = sorted(w for w in words if len(w) > MIN_PREFIX)
        self.spelled: dict[str, str] = {}  # learned short form -> the word it stands for
        readings = {short: [w for w in longer if w != short and abbreviates(short, w)] for short in sorted(words)}
        readings = {short: found for short, found in readings.items() if found}
        if readings:  # the spelling alone is not enough (author / authorization, ssh / snapshot): the meaning too
            words = {w for short, found in readings.items() for w in (short, *found)}
            vectors = dict(zip(*_embedded(words), strict=True))
            for short, found in readings.items():
                score, best = max((float(vectors[short] @ vectors[w]), w) for w in found)
                if score >= SHORT_FORM:
                    self.spelled[short] = best
        self._labels: list[tuple[str, ...]] = []
        self._matrix: np.ndarray | None = None

    def canon(self, key: tuple[str, ...]) -> tuple[str, ...]:
        """``key`` with this server's short forms spelled out, the head lemmatised again."""
        if not key or not any(w in self.spelled for w in key):
            return key
        out = [self.spelled.get(w, w) for w in key]
        out[-1] = lemma(out[-1])
        return tuple(out)

    def how(self, key: tuple[str, ...]) -> str:
        """The short forms ``canon`` spelled out in ``key``, for an edge's evidence ('' when none)."""
        found = [f"{w} = {self.spelled[w]}" for w in key if w in self.spelled]
        return f" (short form {', '.join(found)} on this server)" if found else ""

    def similar(self, key: tuple[str, ...], yielded: Iterable[tuple[str, ...]]) -> tuple[tuple[str, ...], float] | None:
        """Of the entities the server's tools yield (``yielded``: the same for every slot of the server, read
        once), the one whose label's embedding is closest to ``key``'s, at ``SIMILAR`` or more; None when none
        is. Never one that only adds words to ``key`` or takes some away (a more or less specific thing: the
        join's tails meet those already), nor one whose numbers differ (ipv4 / ipv6)."""
        if not key:
            return None
        if self._matrix is None:
            self._labels = sorted({k for k in yielded if k})
            if not self._labels or len(self._labels) > MAX_SIMILAR_LABELS:
                self._matrix = np.zeros((0, 1), dtype=np.float32)
            else:
                self._matrix = np.stack(_embedded(set(self._labels), self._labels)[1])
        if not len(self._matrix):
            return None
        scores = self._matrix @ _embedded({key}, [key])[1][0]
        for at in np.argsort(-scores)[:8]:
            if scores[at] < SIMILAR:
                return None
            other = self._labels[int(at)]
            if (
                other != key
                and not (set(other) <= set(key) or set(key) <= set(other))
                and _numbers(other) == _numbers(key)
            ):
                return other, float(scores[at])
        return None


def _embedded(words: set[str] | set[tuple[str, ...]], order: list | None = None) -> tuple[list, list[np.ndarray]]:
    """(labels, their unit vectors) in ``order`` (default: sorted), a key's label its words joined by spaces."""
    order = order if order is not None else sorted(words)
    texts = tuple(label if isinstance(label, str) else " ".join(label) for label in order)
    return order, embed_labels(texts)


def _numbers(key: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(re.findall(r"\d+", " ".join(key)))


_LABEL_VECTORS: dict[str, np.ndarray] = {}  # label -> unit vector, for the process: servers share labels
_VECTOR_CACHE: list[Path | None] = [None]  # the store's vector cache, once the infer stage names it


def keep_label_vectors_in(path: Path | None) -> None:
    """Keep the label vectors in ``path`` (the store's vector cache, ``paths.store_cache(..., 'embeddings')``,
    which the link stage's tool texts share), so that a later build embeds only labels it has not seen: the
    infer stage names it before it infers. Unset, vectors are kept for the process only."""
    _VECTOR_CACHE[0] = path


def embed_labels(labels: tuple[str, ...]) -> list[np.ndarray]:
    """Unit vectors of short entity labels by the shipped embedding model, each label encoded once a process
    (and once a store, with ``keep_label_vectors_in``)."""
    todo = [label for label in dict.fromkeys(labels) if label not in _LABEL_VECTORS]
    if todo:
        from toolkg.embeddings.encoder import Embedder  # loaded only when a slot is left without a producer

        embedder = Embedder(_VECTOR_CACHE[0])
        try:
            vectors = embedder.encode(todo, label="entity labels", cache=_VECTOR_CACHE[0] is not None)
        finally:
            embedder.close()
        for label, vector in zip(todo, vectors, strict=True):
            _LABEL_VECTORS[label] = vector
    return [_LABEL_VECTORS[label] for label in labels]
