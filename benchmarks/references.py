"""Reference retrievers the issue measures toolkg against, outside the product: plain
all-MiniLM-L6-v2 over a tool's ``name: description`` and a standard BM25 (Okapi, as the rank-bm25
package computes it: k1 1.5, b 0.75, idf floored at 0.25 of the mean) over the same text with plain
lower-case word tokens. Both read the query text alone, never its steps.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np

from toolkg.retrieval.base import Hit, Query, Ranking, servers_of, top

_WORD = re.compile(r"\w+")


def plain_text(tool) -> str:
    return f"{tool.name}: {tool.description}"


class PlainDense:
    name = "plain-dense"

    def __init__(self, index) -> None:
        self.index, self.catalog = index, index.catalog
        self.vectors = index._embedder.encode([plain_text(t) for t in self.catalog.tools], label="embed plain")

    def retrieve(self, query: Query, k: int) -> Ranking:
        scores = self.vectors @ self.index.embed(query.text)
        hits = [Hit(self.catalog.tools[i], float(scores[i]), "plain dense") for i in top(scores, k)]
        return Ranking(hits, servers_of(self.catalog, hits, k))


class PlainBM25:
    name = "plain-bm25"
    k1, b, epsilon = 1.5, 0.75, 0.25

    def __init__(self, index) -> None:
        self.catalog = index.catalog
        docs = [_WORD.findall(plain_text(t).lower()) for t in self.catalog.tools]
        self.freqs = [Counter(d) for d in docs]
        self.lengths = np.array([len(d) for d in docs], dtype=float)
        self.average = float(self.lengths.mean()) if len(docs) else 0.0
        containing = Counter(w for d in docs for w in set(d))
        n = len(docs)
        idf = {w: math.log(n - c + 0.5) - math.log(c + 0.5) for w, c in containing.items()}
        floor = self.epsilon * (sum(idf.values()) / len(idf)) if idf else 0.0
        self.idf = {w: (v if v >= 0 else floor) for w, v in idf.items()}

    def retrieve(self, query: Query, k: int) -> Ranking:
        scores = np.zeros(len(self.freqs))
        norm = self.k1 * (1 - self.b + self.b * self.lengths / max(self.average, 1e-9))
        for word in _WORD.findall(query.text.lower()):
            if word not in self.idf:
                continue
            tf = np.array([f.get(word, 0) for f in self.freqs], dtype=float)
            scores += self.idf[word] * tf * (self.k1 + 1) / (tf + norm)
        hits = [Hit(self.catalog.tools[i], float(scores[i]), "plain bm25") for i in top(scores, k)]
        return Ranking(hits, servers_of(self.catalog, hits, k))


REFERENCES = {"plain-dense": PlainDense, "plain-bm25": PlainBM25}
