"""all-MiniLM-L6-v2 in NumPy: the same weights and tokenizer, without importing torch.

Loading sentence-transformers costs ~7 s on this machine (torch, transformers, sklearn) before a
single query is embedded; a cold ``toolkg retrieve`` paid it for one short text. This module runs the
model's forward pass (6 BERT layers, 384 wide, mean pooling, unit norm) with NumPy on the weights in
the registry package and its Rust tokenizer, and loads in a fraction of a second. Its vectors agree
with sentence-transformers' to within float32 rounding (``tests/unit/embeddings/test_minilm.py`` checks cosine
>= 0.9999 against its vectors of real tool texts, kept in ``tests/fixtures/minilm_reference.npz``), and so with the
ONNX graph built from the same weights (``toolkg.embeddings.onnx_graph``): the vector cache serves both.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

LAYERS = 6
HEADS = 12
EPSILON = 1e-12


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPSILON) * weight + bias


# Numerical Recipes' Chebyshev fit of erfc, highest power first (relative error below 1.2e-7).
_ERFC = (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196, 1.00002368)


def _erf(x: np.ndarray) -> np.ndarray:
    """erf for BERT's exact GELU (not the tanh approximation): NumPy has no erf of its own."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = np.zeros_like(t)
    for coefficient in _ERFC:
        poly = poly * t + coefficient
    erfc = t * np.exp(-z * z - 1.26551223 + t * poly)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0).astype(x.dtype)


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


class NumpyMiniLM:
    """``encode(texts) -> (n, 384) float32`` unit vectors, batch by batch."""

    def __init__(self, model_dir: str | Path, max_tokens: int = 128) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        model_dir = Path(model_dir)
        self.weights = load_file(str(model_dir / "model.safetensors"))
        config = json.loads((model_dir / "config.json").read_text())
        self.heads = int(config.get("num_attention_heads", HEADS))
        self.layers = int(config.get("num_hidden_layers", LAYERS))
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.enable_padding(pad_id=int(config.get("pad_token_id", 0)))

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        batch = self.tokenizer.encode_batch(texts)
        ids = np.array([b.ids for b in batch], dtype=np.int64)
        mask = np.array([b.attention_mask for b in batch], dtype=np.float32)
        types = np.array([b.type_ids for b in batch], dtype=np.int64)
        hidden = self._forward(ids, types, mask)
        pooled = (hidden * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def _forward(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self.weights
        n, length = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][np.arange(length)][None]
            + w["embeddings.token_type_embeddings.weight"][types]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        width = x.shape[-1]
        size = width // self.heads
        blocked = (1.0 - mask)[:, None, None, :] * np.float32(-1e9)  # padding is never attended to
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def dense(h: np.ndarray, name: str, p: str = p) -> np.ndarray:
                return h @ w[f"{p}{name}.weight"].T + w[f"{p}{name}.bias"]

            def split(h: np.ndarray) -> np.ndarray:
                return h.reshape(n, length, self.heads, size).transpose(0, 2, 1, 3)

            q = split(dense(x, "attention.self.query"))
            k = split(dense(x, "attention.self.key"))
            v = split(dense(x, "attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(size)) + blocked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            attention = scores / scores.sum(-1, keepdims=True)
            context = (attention @ v).transpose(0, 2, 1, 3).reshape(n, length, width)
            x = _layer_norm(
                dense(context, "attention.output.dense") + x,
                w[f"{p}attention.output.LayerNorm.weight"],
                w[f"{p}attention.output.LayerNorm.bias"],
            )
            inner = _gelu(dense(x, "intermediate.dense"))
            x = _layer_norm(
                dense(inner, "output.dense") + x, w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"]
            )
        return x
