"""Both engines of all-MiniLM-L6-v2, the NumPy forward pass (toolkg.embeddings.minilm) and ONNX Runtime over the
graph built from the weights (toolkg.embeddings.onnx_graph), give the vectors sentence-transformers gave, kept in
tests/fixtures/minilm_reference.npz (made by tests/support/minilm_reference.py, see there); int8 stays close; a
query is embedded without loading torch."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.support import minilm_reference
from toolkg.embeddings.encoder import BATCH, MAX_TOKENS, MODEL_SHA256, _load_model, _numpy_model, _weights
from toolkg.embeddings.onnx import OnnxMiniLM, model_file


@pytest.fixture(scope="module")
def reference() -> dict[str, np.ndarray]:
    data = minilm_reference.load()
    assert json.loads(str(data["meta"]))["model_sha256"] == MODEL_SHA256  # made from the pinned weights
    return data


def _reference_texts(reference) -> list[str]:
    return [str(t) for t in reference["texts"]]


def test_the_reference_holds_real_tool_texts_and_the_edge_cases():
    data = minilm_reference.load()
    texts = _reference_texts(data)
    assert texts == minilm_reference.real_texts() + list(minilm_reference.EDGE_CASES)  # the texts it says it holds
    assert len(texts) == 71 and data["vectors_128"].shape == data["vectors_256"].shape == (71, 384)
    # the long texts are cut differently at 128 and 256 tokens, so the two sets really differ there
    long = texts.index(minilm_reference.EDGE_CASES[-1])
    assert float(data["vectors_128"][long] @ data["vectors_256"][long]) < 0.99


@pytest.mark.slow
def test_both_engines_equal_sentence_transformers_at_128_tokens(reference):
    texts = _reference_texts(reference)
    for engine in (_numpy_model(), _load_model()):  # the default precision is fp32
        ours = engine.encode(texts)
        cosines = (ours * reference["vectors_128"]).sum(1)
        assert cosines.min() >= 0.9999, (type(engine).__name__, cosines.min(), texts[int(cosines.argmin())])
        assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert _numpy_model().tokenizer.truncation["max_length"] == MAX_TOKENS
    assert _load_model().tokenizer.truncation["max_length"] == MAX_TOKENS


@pytest.mark.slow
def test_the_graph_equals_sentence_transformers_at_256_tokens(reference):
    """The position table past 128 (the benchmarks' plain reference embeds 256 tokens)."""
    weights = _weights()
    model = OnnxMiniLM(model_file(weights, MODEL_SHA256, "fp32"), weights, max_tokens=256, batch=BATCH)
    cosines = (model.encode(_reference_texts(reference)) * reference["vectors_256"]).sum(1)
    assert cosines.min() >= 0.9999, cosines.min()


def test_int8_weights_stay_close_to_sentence_transformers(reference):
    """Measured on the fixture at batch 1, 8, 16, 32 and 64: real tool texts min cosine 0.986-0.989, mean
    0.993-0.994; the edge cases down to 0.970 (the empty text). Dynamic quantization scales each batch's
    activations together, so a vector moves a little with its batch mates. The int8 kernels differ by CPU: on an
    Intel Xeon (AVX-512 VNNI) real texts kept >= 0.986, on an AMD EPYC with AVX2 only one fell to 0.9799 (its
    u8 x s8 products saturate), hence 0.975."""
    weights = _weights()
    int8 = OnnxMiniLM(model_file(weights, MODEL_SHA256, "int8"), weights, MAX_TOKENS, BATCH)
    cosines = (int8.encode(_reference_texts(reference)) * reference["vectors_128"]).sum(1)
    real = cosines[: minilm_reference.REAL_TEXTS]
    assert real.min() >= 0.975 and cosines.min() >= 0.96 and cosines.mean() >= 0.99, (real.min(), cosines.min())
    assert cosines.min() < 0.9999  # it is the int8 graph, not the float one under another name


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


@pytest.mark.slow
def test_embedding_ahead_fills_the_cache_with_the_vectors_the_link_stage_would_compute(tmp_path):
    from toolkg.embeddings.ahead import MIN_TEXTS, EmbedAhead
    from toolkg.embeddings.encoder import Embedder

    texts = _texts(MIN_TEXTS + 24)
    assert EmbedAhead.start(tmp_path / "small.sqlite", texts[: MIN_TEXTS - 1]) is None  # not worth a process
    ahead = EmbedAhead.start(tmp_path / "cache.sqlite", texts)
    assert ahead is not None  # enough texts: a worker started
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
    assert ahead is not None  # enough texts: a worker started
    ahead.finish()  # at once: the link stage embeds the rest itself
    assert not ahead._process.is_alive()
    left = Embedder(tmp_path / "cache.sqlite").missing(texts)
    assert len(left) >= len(texts) - CHUNK
