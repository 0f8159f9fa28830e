"""Dense retrieval: embeddings of tool/server/node text, offline by default.

The offline model is all-MiniLM-L6-v2 (``toolkg.embeddings.encoder``); an OpenAI-compatible
``/v1/embeddings`` endpoint is used instead when ``TOOLKG_EMBED_BASE_URL`` and
``TOOLKG_EMBED_MODEL`` are set. Either way vectors are cached on disk by model and text hash
(``<store>/cache/embeddings.sqlite``), so a warm retriever never re-embeds the catalog, and the
query itself is the only text embedded per search.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from toolkg.embeddings.encoder import Embedder, VectorCache
from toolkg.environment import EMBED_API_KEY, EMBED_BASE_URL, EMBED_MODEL
from toolkg.errors import ConfigError


class EndpointEmbedder:
    """Embeddings from an OpenAI-compatible server (Ollama, vLLM, llama.cpp, OpenAI), cached like ``Embedder``."""

    def __init__(self, base_url: str, model: str, api_key: str = "", cache_path: str | Path | None = None) -> None:
        import openai

        self.model = model
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or "unused", timeout=60, max_retries=3)
        self.computed = 0
        self._cache = VectorCache(cache_path) if cache_path is not None else None

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"endpoint:{self.model}\x1f{text}".encode()).hexdigest()

    def encode(self, texts: Sequence[str], label: str = "embed", cache: bool = True) -> np.ndarray:
        import openai

        keys = [self._key(t) for t in texts]
        found = self._cache.get(set(keys)) if cache and self._cache else {}
        todo = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in found}.items())
        for start in range(0, len(todo), 128):
            chunk = todo[start : start + 128]
            try:
                reply = self.client.embeddings.create(model=self.model, input=[t for _, t in chunk])
            except openai.APIError as exc:
                raise ConfigError(f"embeddings endpoint failed: {' '.join(str(exc).split())[:200]}") from None
            for (key, _), item in zip(chunk, sorted(reply.data, key=lambda d: d.index), strict=True):
                vector = np.asarray(item.embedding, dtype=np.float32)
                found[key] = vector / max(float(np.linalg.norm(vector)), 1e-12)
            self.computed += len(chunk)
            if cache and self._cache:
                self._cache.put((k, found[k]) for k, _ in chunk)
        return np.vstack([found[k] for k in keys]) if keys else np.zeros((0, 0), dtype=np.float32)

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None


def make_embedder(cache_path: str | Path | None):
    """The endpoint when ``TOOLKG_EMBED_BASE_URL`` + ``TOOLKG_EMBED_MODEL`` are set, else the offline model."""
    base_url, model = EMBED_BASE_URL.raw(), EMBED_MODEL.raw()
    if base_url or model:
        if not (base_url and model):
            raise ConfigError("set both TOOLKG_EMBED_BASE_URL and TOOLKG_EMBED_MODEL to use an embeddings endpoint")
        return EndpointEmbedder(base_url, model, EMBED_API_KEY.get(), cache_path)
    return Embedder(cache_path)
