"""BM25 over tool (or server) text: a small inverted index in numpy, no extra dependency.

Tokens: identifiers split (snake, camel, kebab), lower-cased, English stop words dropped,
lemmatised (spaCy's lookup table), so "users" finds ``get_user``. Non-Latin words are kept
whole, so a query in the catalog's other language still matches its words.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from toolkg.text.lexicon import STOP_WORDS
from toolkg.text.words import lemma, split_identifier

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def tokenize(text: str) -> list[str]:
    tokens = []
    for raw in _WORD.findall(text):
        for word in split_identifier(raw) if raw.isascii() else [raw.lower()]:
            if word not in STOP_WORDS and (len(word) > 1 or not word.isascii()):
                tokens.append(lemma(word) if word.isascii() else word)
    return tokens


class BM25:
    """Okapi BM25 (k1 = 1.2, b = 0.75) over ``texts``; ``scores(query)`` for every document."""

    def __init__(self, texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.size = len(texts)
        docs = [Counter(tokenize(t)) for t in texts]
        lengths = np.array([sum(d.values()) for d in docs], dtype=np.float32)
        average = float(lengths.mean()) if self.size else 1.0
        postings: dict[str, list[tuple[int, int]]] = {}
        for i, counts in enumerate(docs):
            for term, tf in counts.items():
                postings.setdefault(term, []).append((i, tf))
        self.index: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for term, items in postings.items():
            ids = np.fromiter((i for i, _ in items), dtype=np.int32, count=len(items))
            tf = np.fromiter((f for _, f in items), dtype=np.float32, count=len(items))
            idf = math.log(1 + (self.size - len(items) + 0.5) / (len(items) + 0.5))
            norm = k1 * (1 - b + b * lengths[ids] / max(average, 1e-9))
            self.index[term] = (ids, (idf * tf * (k1 + 1) / (tf + norm)).astype(np.float32))

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(self.size, dtype=np.float32)
        for term in set(tokenize(query)):
            if term in self.index:
                ids, weights = self.index[term]
                out[ids] += weights
        return out
