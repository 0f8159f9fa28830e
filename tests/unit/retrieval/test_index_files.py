"""The retrieval index's files: BM25 postings equal to the per-term loop they replaced, to the bit; strings,
documents and postings written and mapped back unchanged; an incomplete or unreadable index is never used."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolkg.retrieval.catalog import ServerDoc, ToolDoc
from toolkg.retrieval.index_files import (
    INDEX_STAGE,
    MANIFEST,
    SavedIndex,
    StringTable,
    _write_strings,
    token_of,
    usable,
    with_token,
    write_index,
)
from toolkg.retrieval.lexical import BM25, build_postings
from toolkg.stages import StageName

WORDS = st.sampled_from(["get", "user", "users", "weather", "book", "table", "天气", "préféré", "id", "x"])
TEXTS = st.lists(st.lists(WORDS, max_size=12).map(" ".join), max_size=12)


def per_term_bm25(texts: list[list[str]], k1: float = 1.2, b: float = 0.75) -> dict[str, tuple[list, bytes]]:
    """BM25 as toolkg built it before the flat arrays: one numpy pass per term (the reference)."""
    size = len(texts)
    docs = [Counter(t) for t in texts]
    lengths = np.array([sum(d.values()) for d in docs], dtype=np.float32)
    average = float(lengths.mean()) if size else 1.0
    postings: dict[str, list[tuple[int, int]]] = {}
    for i, counts in enumerate(docs):
        for term, count in counts.items():
            postings.setdefault(term, []).append((i, count))
    out = {}
    for term, items in postings.items():
        ids = np.fromiter((i for i, _ in items), dtype=np.int32, count=len(items))
        tf = np.fromiter((f for _, f in items), dtype=np.float32, count=len(items))
        idf = math.log(1 + (size - len(items) + 0.5) / (len(items) + 0.5))
        norm = k1 * (1 - b + b * lengths[ids] / max(average, 1e-9))
        out[term] = (ids.tolist(), (idf * tf * (k1 + 1) / (tf + norm)).astype(np.float32).tobytes())
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcdefghij"), max_size=15), max_size=20))
def test_flat_postings_equal_the_per_term_loop_to_the_bit(docs):
    postings = build_postings(docs)
    flat = {
        term: (
            postings.doc_ids[postings.offsets[i] : postings.offsets[i + 1]].tolist(),
            postings.weights[postings.offsets[i] : postings.offsets[i + 1]].tobytes(),
        )
        for i, term in enumerate(postings.terms)
    }
    assert flat == per_term_bm25(docs)
    assert list(postings.terms) == sorted(postings.terms)


def test_a_query_scores_by_its_terms_once_each():
    bm25 = BM25.from_texts(["get the weather forecast", "book a table", "get user, get users"])
    scores = bm25.scores("users weather weather")
    assert scores[0] > 0 and scores[1] == 0 and scores[2] > 0
    assert bm25.postings_of("zzz") is None and bm25.postings_of("") is None


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(max_size=20), max_size=30))
def test_strings_come_back_as_written(tmp_path, items):
    folder = tmp_path / "strings"
    folder.mkdir(exist_ok=True)
    encodable = [s for s in items if not any(0xD800 <= ord(c) <= 0xDFFF for c in s)]
    _write_strings(folder, "t", [s.encode() for s in encodable])
    table = StringTable(folder, "t", len(encodable))
    assert list(table) == encodable and table[:] == encodable
    if encodable:
        assert table[-1] == encodable[-1]
    with pytest.raises(IndexError):
        table[len(encodable)]


def _docs(texts: list[str]) -> tuple[list[ToolDoc], list[ServerDoc]]:
    tools = [  # IRIs out of catalog order (t10 sorts before t2), as a store's may be
        ToolDoc(f"urn:t{i}", f"s{i % 2}::t{i}", f"s{i % 2}", f"t{i}", text, ("a", "b"), ("first", ""), text)
        for i, text in enumerate(texts)
    ]
    servers = [ServerDoc(f"urn:s{i}", f"s{i}", f"server {i}", "serves tools") for i in range(2)]
    return tools, servers


def _vectors(tools, servers):
    rng = np.random.default_rng(0)
    return lambda: (rng.random((len(tools), 4), dtype=np.float32), rng.random((len(servers), 4), dtype=np.float32))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TEXTS)
def test_an_index_maps_back_what_was_written(tmp_path, texts):
    tools, servers = _docs(texts)
    written = write_index(tmp_path, "seed", tools, servers, "model-a", _vectors(tools, servers))
    saved = SavedIndex(written.path)
    assert list(saved.tools) == tools and saved.servers() == servers
    in_memory = BM25.from_texts([t.text for t in tools])
    for query in ("get users", "天气 table", "nothing here"):
        assert saved.tool_bm25.scores(query).tobytes() == in_memory.scores(query).tobytes()
    assert saved.tool_vectors is not None and saved.tool_vectors.shape == (len(tools), 4) and saved.model == "model-a"
    catalog = saved.catalog(store=None, with_nodes=False)  # type: ignore[arg-type]  # no nodes: the store is unread
    assert catalog.tool_at == {t.iri: i for i, t in enumerate(tools)}  # found by binary search, no dict built
    assert catalog.tool_at.get("urn:nothing") is None and "urn:t" not in catalog.tool_at


def test_the_same_content_is_written_once_and_other_content_elsewhere(tmp_path):
    tools, servers = _docs(["get the weather", "book a table"])
    first = write_index(tmp_path, "seed", tools, servers, "m", _vectors(tools, servers))
    again = write_index(tmp_path, "seed", tools, servers, "m", _vectors(tools, servers))
    assert again.reused and again.token == first.token and not first.reused
    assert write_index(tmp_path, "other code", tools, servers, "m", _vectors(tools, servers)).token != first.token
    changed, _ = _docs(["get the weather", "book two tables"])
    assert write_index(tmp_path, "seed", changed, servers, "m", _vectors(changed, servers)).token != first.token
    assert not [p for p in (tmp_path / "index").iterdir() if p.name.startswith(".")]  # no scratch left behind


def test_no_vectors_when_the_build_embedded_none(tmp_path):
    tools, servers = _docs(["get the weather"])
    written = write_index(tmp_path, "seed", tools, servers, "m", lambda: None)
    saved = SavedIndex(written.path)
    assert not written.vectors and saved.model is None and saved.tool_vectors is None


@pytest.mark.parametrize(
    "damage",
    ["truncate vectors", "drop docs", "garbage manifest", "other format", "garbage npy header", "offsets past the end"],
)
def test_a_damaged_index_is_not_usable(tmp_path, damage):
    tools, servers = _docs(["get the weather", "book a table", "list users"])
    folder = write_index(tmp_path, "seed", tools, servers, "m", _vectors(tools, servers)).path
    assert usable(folder)
    if damage == "truncate vectors":
        path = folder / "tool_vectors.npy"
        path.write_bytes(path.read_bytes()[:-8])
    elif damage == "drop docs":
        (folder / "tool_docs.bin").unlink()
    elif damage == "garbage manifest":
        (folder / MANIFEST).write_text("{not json")
    elif damage == "other format":
        manifest = json.loads((folder / MANIFEST).read_text())
        (folder / MANIFEST).write_text(json.dumps({**manifest, "format": -1}))
    elif damage == "garbage npy header":
        path = folder / "tool_bm25.doc_ids.npy"
        path.write_bytes(b"x" * path.stat().st_size)  # same size: only reading it tells
    else:
        path = folder / "tool_docs.offsets.npy"
        offsets = np.load(path)
        offsets[-1] += 1
        np.save(path, offsets)
    assert not usable(folder)


def test_the_store_records_the_token_after_the_stage_digest():
    assert token_of(with_token("0123456789abcdef", "f" * 32)) == "f" * 32
    assert INDEX_STAGE == StageName.INDEX


def test_a_missing_folder_is_not_usable(tmp_path: Path):
    assert not usable(tmp_path / "index" / "nothing")


def test_tools_are_found_by_iri_whatever_the_iris_sort_order(tmp_path: Path):
    tools, servers = _docs([f"tool number {i}" for i in range(12)])  # urn:t10 and urn:t11 sort before urn:t2
    catalog = SavedIndex(write_index(tmp_path, "seed", tools, servers, None, lambda: None).path).catalog(None)  # type: ignore[arg-type]  # nodes never asked
    assert [catalog.tool_at[t.iri] for t in tools] == list(range(12))
    assert [catalog.tools[catalog.tool_at[t.iri]] for t in tools] == tools
