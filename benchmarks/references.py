"""Reference retrievers toolkg is measured against, outside the product: plain all-MiniLM-L6-v2 as
sentence-transformers runs it (256 tokens) over a tool's name, description and each parameter's name and
description, and a standard BM25 (Okapi, as the rank-bm25 package computes it: k1 1.5, b 0.75, idf floored
at 0.25 of the mean) over the same text with plain lower-case word tokens. Both read the query text alone,
never its steps.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np

from toolkg.retrieval.base import Hit, Query, Ranking, servers_of, top

_WORD = re.compile(r"\w+")


PLAIN_TOKENS = 256  # sentence-transformers' default for this model (toolkg embeds 128)
_plain_model = None


def plain_text(tool) -> str:
    """Name, description, then each parameter's name and description (the issue's plain tool text)."""
    parts = [
        tool.name,
        tool.description,
        *(
            f"{name} {description}".strip()
            for name, description in zip(tool.parameters, tool.parameter_descriptions, strict=False)
        ),
    ]
    return " ".join(part for part in parts if part)


def plain_encode(texts: list[str]) -> np.ndarray:
    """The model at 256 tokens on ONNX Runtime (the same weights; equal to sentence-transformers')."""
    global _plain_model
    if _plain_model is None:
        from toolkg.embeddings.encoder import MODEL_SHA256, _weights
        from toolkg.embeddings.onnx import OnnxMiniLM, model_file

        weights = _weights()
        _plain_model = OnnxMiniLM(model_file(weights, MODEL_SHA256, "fp32"), weights, max_tokens=PLAIN_TOKENS)
    return _plain_model.encode(texts)


class PlainDense:
    name = "plain-dense"

    def __init__(self, index) -> None:
        self.index, self.catalog = index, index.catalog
        self.vectors = plain_encode([plain_text(t) for t in self.catalog.tools])

    def retrieve(self, query: Query, k: int) -> Ranking:
        scores = self.vectors @ plain_encode([query.text])[0]
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
