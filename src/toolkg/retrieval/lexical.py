"""BM25 over tool (or server) text: an inverted index as flat numpy arrays, no extra dependency.

Tokens: identifiers split (snake, camel, kebab), lower-cased, English stop words dropped,
lemmatised (spaCy's lookup table), so "users" finds ``get_user``. Non-Latin words are kept
whole, so a query in the catalog's other language still matches its words.

The index is four arrays (``Postings``): the terms in sorted order, where each term's postings start, the
postings' documents and their BM25 weights. Built in memory from texts (``BM25.from_texts``), or read from the
build's retrieval index (``toolkg.retrieval.index_files``) as memory-mapped files: the same arrays either way, so
both give the same scores to the last bit.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from toolkg.text.lexicon import STOP_WORDS
from toolkg.text.words import lemma, split_identifier

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    for raw in _WORD.findall(text):
        tokens += _word_tokens(raw)
    return tokens


@lru_cache(maxsize=250_000)  # a catalog repeats its words: each is split, filtered and lemmatised once
def _word_tokens(raw: str) -> tuple[str, ...]:
    """The tokens of one word as ``_WORD`` finds it (an identifier gives several)."""
    tokens = []
    for word in split_identifier(raw) if raw.isascii() else [raw.lower()]:
        if word not in STOP_WORDS and (len(word) > 1 or not word.isascii()):
            tokens.append(lemma(word) if word.isascii() else word)
    return tuple(tokens)


@dataclass(frozen=True)
class Postings:
    """An inverted index as flat arrays: term ``t``'s postings are ``doc_ids[offsets[t]:offsets[t + 1]]``
    (ascending) with their BM25 ``weights``. ``terms`` is sorted (code point order, which is UTF-8 byte
    order): a list in memory, or a table read from disk (``index_files.StringTable``)."""

    size: int  # documents
    terms: Sequence[str]
    offsets: np.ndarray  # int64, one more than terms
    doc_ids: np.ndarray  # int32
    weights: np.ndarray  # float32


class BM25:
    """Okapi BM25 (k1 = 1.2, b = 0.75); ``scores(query)`` for every document."""

    def __init__(self, postings: Postings) -> None:
        self.postings = postings
        self.size = postings.size

    @classmethod
    def from_texts(cls, texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> BM25:
        return cls(build_postings([tokenize(t) for t in texts], k1, b))

    def postings_of(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(documents, weights) of ``term``, or None when no document has it."""
        p = self.postings
        at = bisect_left(p.terms, term)
        if at == len(p.terms) or p.terms[at] != term:
            return None
        start, end = int(p.offsets[at]), int(p.offsets[at + 1])
        return p.doc_ids[start:end], p.weights[start:end]

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(self.size, dtype=np.float32)
        # sorted: float32 sums in one order, so a query scores the same in every process (a set's order
        # changes with each process's string hashing)
        for term in sorted(set(tokenize(query))):
            found = self.postings_of(term)
            if found is not None:
                ids, weights = found
                out[ids] += weights
        return out


def build_postings(docs: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75) -> Postings:
    """The postings of tokenised documents, each weight computed in float32 exactly as a per-term loop
    would (``idf * tf * (k1 + 1) / (tf + norm)``, the Python floats taken as float32): the arrays are
    built once, by the build's index stage or a retriever without one, and must agree to the bit."""
    size = len(docs)
    vocabulary: dict[str, int] = {}
    term_of: list[int] = []
    doc_of: list[int] = []
    frequency: list[int] = []
    lengths = np.zeros(size, dtype=np.float32)
    for i, tokens in enumerate(docs):
        lengths[i] = len(tokens)
        for term, count in Counter(tokens).items():
            term_of.append(vocabulary.setdefault(term, len(vocabulary)))
            doc_of.append(i)
            frequency.append(count)
    terms = sorted(vocabulary)
    rank = np.empty(len(terms), dtype=np.int64)
    rank[[vocabulary[t] for t in terms]] = np.arange(len(terms))
    term_rank = rank[np.asarray(term_of, dtype=np.int64)]
    order = np.lexsort((np.asarray(doc_of, dtype=np.int64), term_rank))  # by term, then document
    ids = np.asarray(doc_of, dtype=np.int32)[order]
    tf = np.asarray(frequency, dtype=np.float32)[order]
    counts = np.bincount(term_rank, minlength=len(terms))
    offsets = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    # idf by math.log per term (numpy's vector log may round differently), then float32 as a weak scalar is
    idf = np.array([math.log(1 + (size - int(n) + 0.5) / (int(n) + 0.5)) for n in counts], dtype=np.float32)
    average = float(lengths.mean()) if size else 1.0
    norm = k1 * (1 - b + b * lengths / max(average, 1e-9))
    weights = idf[np.repeat(np.arange(len(terms)), counts)] * tf * (k1 + 1) / (tf + norm[ids])
    return Postings(size, terms, offsets, ids, weights.astype(np.float32))
