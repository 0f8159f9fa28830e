"""Both engines of all-MiniLM-L6-v2, the NumPy forward pass (toolkg.embeddings.minilm) and ONNX Runtime
(toolkg.embeddings.onnx), give the vectors sentence-transformers gives; int8 stays close; a query is
embedded without loading torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from toolkg.embeddings.encoder import BATCH, MAX_TOKENS, MODEL_SHA256, _load_model, _numpy_model, _weights, tool_text
from toolkg.embeddings.onnx import OnnxMiniLM, model_file
from toolkg.models import Parameter, Tool

ROOT = Path(__file__).resolve().parents[3]


def _real_texts() -> list[str]:
    servers = json.loads((ROOT / "data" / "livemcpbench" / "tools.json").read_text())
    texts = []
    for server in servers:
        for tools in server.get("tools", {}).values():
            for tool in tools.get("tools", [])[:2]:
                params = list((tool.get("inputSchema") or {}).get("properties") or {})
                parameters = tuple(Parameter(name=p) for p in params)
                texts.append(
                    tool_text(
                        Tool(
                            server_id="s",
                            name=tool["name"],
                            description=tool.get("description") or "",
                            parameters=parameters,
                        )
                    )
                )
    texts = texts[:60] + ["", "x", "天气预报 weather " * 100]  # empty, one letter, past MAX_TOKENS, CJK
    assert len(texts) > 40
    return texts


def _sentence_transformers(texts: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(_weights()), device="cpu")
    model.max_seq_length = MAX_TOKENS
    return model.encode(texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)


@pytest.mark.slow  # loads torch and sentence-transformers: ~15 s
def test_both_engines_equal_sentence_transformers_on_real_tool_texts():
    texts = _real_texts()
    theirs = _sentence_transformers(texts)
    for engine in (_numpy_model(), _load_model()):  # the default precision is fp32
        ours = engine.encode(texts)
        cosines = (ours * theirs).sum(1)
        assert cosines.min() >= 0.9999, (type(engine).__name__, cosines.min())
        assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert _numpy_model().tokenizer.truncation["max_length"] == MAX_TOKENS
    assert _load_model().tokenizer.truncation["max_length"] == MAX_TOKENS


def test_int8_weights_stay_close_to_float32():
    texts = _real_texts()
    weights = _weights()
    exact = _load_model().encode(texts)
    int8 = OnnxMiniLM(model_file(weights, MODEL_SHA256, "int8"), weights, MAX_TOKENS, BATCH).encode(texts)
    cosines = (exact * int8).sum(1)
    assert cosines.mean() >= 0.99 and cosines.min() >= 0.97, (cosines.mean(), cosines.min())


def test_a_query_is_embedded_without_torch(tmp_path):
    script = (
        "import sys\n"
        "from toolkg.embeddings.encoder import Embedder\n"
        "vector = Embedder().encode(['Find the weather in Paris'], cache=False)\n"
        "assert vector.shape == (1, 384)\n"
        "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"], out.stdout + out.stderr


def _texts(n: int) -> list[str]:
    verbs, things = ["get", "list", "create", "delete", "send"], ["invoice", "flight", "ticket", "report", "file"]
    return [f"{verbs[i % 5]} {things[i // 5 % 5]} {i}: does it to record number {i}." for i in range(n)]


def test_embedding_ahead_fills_the_cache_with_the_vectors_the_link_stage_would_compute(tmp_path):
    from toolkg.embeddings.ahead import MIN_TEXTS, EmbedAhead
    from toolkg.embeddings.encoder import Embedder

    texts = _texts(MIN_TEXTS + 24)
    assert EmbedAhead.start(tmp_path / "small.sqlite", texts[: MIN_TEXTS - 1]) is None  # not worth a process
    ahead = EmbedAhead.start(tmp_path / "cache.sqlite", texts)
    ahead._process.join(timeout=600)  # let it run to the end (finish() would stop it early)
    assert ahead._process.exitcode == 0
    ahead.finish()
    cached = Embedder(tmp_path / "cache.sqlite")
    assert cached.missing(texts) == []
    sample = texts[::97]
    ahead_vectors = cached.encode(sample)
    assert cached.computed == 0  # every one came from the worker
    fresh = Embedder().encode(sample)
    assert float(np.min(np.sum(ahead_vectors * fresh, axis=1))) > 0.9999


def test_embedding_ahead_stops_after_its_current_chunk(tmp_path):
    from toolkg.embeddings.ahead import CHUNK, EmbedAhead
    from toolkg.embeddings.encoder import Embedder

    texts = _texts(20 * CHUNK)
    ahead = EmbedAhead.start(tmp_path / "cache.sqlite", texts)
    ahead.finish()  # at once: the link stage embeds the rest itself
    assert not ahead._process.is_alive()
    left = Embedder(tmp_path / "cache.sqlite").missing(texts)
    assert len(left) >= len(texts) - CHUNK
