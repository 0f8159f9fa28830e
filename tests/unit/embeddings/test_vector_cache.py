"""The vector cache's machine-wide layer: a text any store embedded is not embedded again for another."""

from __future__ import annotations

import numpy as np
import pytest

from toolkg.embeddings.encoder import Embedder, VectorCache


def _vectors(n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [v / np.linalg.norm(v) for v in rng.normal(size=(n, 384)).astype(np.float32)]


def test_a_vector_one_store_wrote_is_found_by_another_and_copied_into_it(tmp_path) -> None:
    shared = tmp_path / "machine" / "vectors.sqlite"
    first = VectorCache(tmp_path / "a" / "embeddings.sqlite", shared)
    (vector,) = _vectors(1)
    first.put([("k", vector)])
    first.close()
    second = VectorCache(tmp_path / "b" / "embeddings.sqlite", shared)
    assert np.array_equal(second.get({"k", "other"})["k"], vector)
    second.close()
    alone = VectorCache(tmp_path / "b" / "embeddings.sqlite")  # the store's own file kept the copy
    assert set(alone.get({"k"})) == {"k"}
    alone.close()


def test_the_machine_file_keeps_the_newest_vectors_within_its_limit(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TOOLKG_SHARED_VECTORS_MAX", "3")
    shared = tmp_path / "vectors.sqlite"
    cache = VectorCache(tmp_path / "store.sqlite", shared)
    vectors = _vectors(5)
    for i, vector in enumerate(vectors):
        cache.put([(f"k{i}", vector)])
    cache.put([("k1", vectors[1])])  # written again: now among the newest
    cache.close()
    other = VectorCache(tmp_path / "other.sqlite", shared)
    assert set(other.get({f"k{i}" for i in range(5)})) == {"k1", "k3", "k4"}
    other.close()


def test_a_machine_file_that_cannot_be_opened_is_a_cache_that_misses(tmp_path) -> None:
    (tmp_path / "taken").mkdir()  # a directory where the file should be
    cache = VectorCache(tmp_path / "store.sqlite", tmp_path / "taken")
    (vector,) = _vectors(1)
    cache.put([("k", vector)])
    assert set(cache.get({"k", "missing"})) == {"k"}
    cache.close()


@pytest.mark.parametrize("shared", ["1", "0"])
def test_an_embedder_of_another_store_computes_nothing_a_first_one_embedded(tmp_path, monkeypatch, shared) -> None:
    monkeypatch.setenv("TOOLKG_CACHE_DIR", str(tmp_path / "machine"))
    monkeypatch.setenv("TOOLKG_SHARED_VECTORS", shared)
    texts = ["get_weather: the forecast for a city", "send_email: send a message to a recipient"]
    first = Embedder(tmp_path / "a" / "embeddings.sqlite")
    vectors = first.encode(texts)
    first.close()
    second = Embedder(tmp_path / "b" / "embeddings.sqlite")
    assert np.allclose(second.encode(texts), vectors, atol=1e-6)
    assert second.computed == (0 if shared == "1" else 2)  # off: every store embeds its own
    second.close()
