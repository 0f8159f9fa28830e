"""Retrievers on a small hand-made catalog with known answers, the metrics, and the CLI contract."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import CASES
from toolkg.retrieval import Index, Query, make_retriever

CATALOG = CASES / "retrieval" / "catalog.json"
QUERIES = CASES / "retrieval" / "queries.jsonl"
BOOK = Query("book", "Reserve a table for four at Luigi's restaurant")


@pytest.fixture(scope="module")
def store(built_store) -> Path:
    """The retrieval test catalog's store, shared with the other retrieval tests (read only)."""
    directory = built_store(CATALOG)
    assert built_store.summaries[directory].inferred["total"] >= 1
    return directory


@pytest.fixture(scope="module")
def index(store):
    opened = Index(store)
    yield opened
    opened.close()


def _names(ranking) -> list[str]:
    return [h.tool.name for h in ranking.tools]


def test_a_dependency_is_reached_only_through_the_graph(index):
    for text_only in ("bm25", "dense", "hybrid"):
        assert "tablefinder_login" not in _names(make_retriever(text_only, index).retrieve(BOOK, 3))
    ranking = make_retriever("grtf", index, seeds=1).retrieve(BOOK, 3)
    # the booking tool, then what it depends on: the login of its own service (another server's
    # find_restaurants returns restaurants too, but a bare 'restaurant' is no value to pass across servers)
    assert _names(ranking)[:2] == ["tablefinder_book_table", "tablefinder_login"]
    assert ranking.tools[1].why == "parameterDirectlyDependsOn of tablefinder_book_table"
    # the kinds followed are an option: without parameter edges the login is not reached
    only_tools = make_retriever("grtf", index, seeds=1, kinds=["toolDirectlyDependsOn"]).retrieve(BOOK, 3)
    assert "tablefinder_login" not in _names(only_tools)


# Weights that trust inferred edges (the shipped ones are learned from the suite's labels and change when it
# is retrained): the mechanism is tested with these, not the learned figures.
TRUSTING = {
    "text": {
        "log_rank": -1.0,
        "top_cosine": 2.0,
        "top_cosine_x_log_rank": 0.0,
        "step": 0.0,
        "clause": 0.0,
        "implied": -1.0,
        "log_parts": 0.0,
        "top_margin": 0.0,
        "top_margin_x_log_rank": 0.0,
        "bias": -1.0,
    },
    "edge": {"confidence": 4.0, "depth": 0.0, "bias": 0.0},
}


def test_auto_brings_dependencies_with_their_evidence(index):
    ranking = make_retriever("auto", index, seeds=1, calibration=TRUSTING).retrieve(BOOK, 3)
    assert _names(ranking)[0] == "tablefinder_book_table" and "tablefinder_login" in _names(ranking)
    login = next(h for h in ranking.tools if h.tool.name == "tablefinder_login")
    assert "DependsOn of tablefinder_book_table" in login.why
    # a producer is never more likely than the tool that needs it
    assert login.score <= ranking.tools[0].score
    # without graph evidence (no seeds) only text matches remain
    text_only = make_retriever("auto", index, seeds=0, calibration=TRUSTING).retrieve(BOOK, 3)
    assert "tablefinder_login" not in _names(text_only)


def test_auto_graph_additions_never_displace_a_stronger_text_hit(index):
    """The rule of auto: with the graph on, the text hits keep their order, and a text hit leaves the
    top k only for a graph addition whose probability is higher than its own."""
    for query in (BOOK, Query("t", "Book a table at Luigi's for tomorrow"), Query("w", "weather report for Paris")):
        text_only = make_retriever("auto", index, seeds=0, calibration=TRUSTING).retrieve(query, 5)
        with_graph = make_retriever("auto", index, calibration=TRUSTING).retrieve(query, 5)
        # hits on their text evidence (not lifted by the graph) keep the text order among themselves
        on_text = [h.tool.id for h in with_graph.tools if "DependsOn of" not in h.why]
        assert on_text == [h.tool.id for h in text_only.tools if h.tool.id in on_text]
        kept = [h.tool.id for h in with_graph.tools if h.tool.id in {t.tool.id for t in text_only.tools}]
        lowest_addition = min((h.score for h in with_graph.tools if h.tool.id not in kept), default=1.0)
        for hit in text_only.tools:
            if hit.tool.id not in kept:  # pushed out: only by additions that beat it
                assert lowest_addition > hit.score


def test_fused_first_stage_is_hybrid_under_rrf_weights_and_learned_otherwise(index):
    """The fusion's rrf feature alone reproduces hybrid's ranking exactly (a calibration file without fusion
    weights gets that); the shipped, learned weights rank by both retrievers' evidence."""
    from toolkg.retrieval.baselines import HybridRetriever
    from toolkg.retrieval.calibration import FUSION_FEATURES, load_calibration
    from toolkg.retrieval.fusion import candidates, ranking

    rrf_only = load_calibration(TRUSTING)
    assert rrf_only.fusion == tuple(float(name == "rrf") for name in (*FUSION_FEATURES, "bias"))
    hybrid = HybridRetriever(index)
    for query in (BOOK, Query("w", "weather report for Paris"), Query("x", "zzz qqq")):
        index.begin_query([query.text])
        fused = ranking(candidates(index, query.text), rrf_only.fusion)
        assert [i for i, _ in fused] == [i for i, _ in hybrid.ranked(query.text)]
        # every candidate is scored; a text with no word in the catalog still gets dense's candidates
        assert len(fused) >= min(100, len(index.catalog.tools))
    shipped = load_calibration()
    assert len(shipped.fusion) == len(FUSION_FEATURES) + 1 and any(shipped.fusion[:-2])
    index.begin_query([BOOK.text])
    assert (
        ranking(candidates(index, BOOK.text), shipped.fusion)[0][0]
        == index.catalog.tool_at[next(t.iri for t in index.catalog.tools if t.name == "tablefinder_book_table")]
    )


def test_auto_rejects_malformed_calibration(index):
    from toolkg.errors import ConfigError

    with pytest.raises(ConfigError, match="calibration"):
        make_retriever("auto", index, calibration={"text": {"log_rank": 1}})
    with pytest.raises(ConfigError, match="calibration"):
        make_retriever("auto", index, calibration={**TRUSTING, "fusion": ["not", "named"]})


def test_auto_splits_a_request_without_steps_into_its_clauses(index):
    memo = Query("pdf", "Create a new word document for the memo, then convert it to PDF")
    names = _names(make_retriever("auto", index).retrieve(memo, 3))
    assert {"create_document", "convert_to_pdf"} <= set(names), names


def test_auto_adds_the_needs_a_request_implies(index):
    # nothing in the request names a file tool: the path to keep the forecast in implies one
    rain = Query("rain", "Check whether it rains in Paris and keep the forecast in /home/me/paris.txt")
    assert "write_file" not in _names(make_retriever("dense", index).retrieve(rain, 3))
    ranking = make_retriever("auto", index).retrieve(rain, 3)
    assert "get_daily_report" in _names(ranking)  # what the request says is there too
    assert any(
        h.tool.name == "write_file" and h.why.startswith("implied need: write content to a text file at a path")
        for h in ranking.tools
    )
    # a relative time needs today's date
    table = Query("t", "Book a table at Luigi's for tomorrow")
    assert "get_current_time" not in _names(make_retriever("dense", index).retrieve(table, 3))
    assert "get_current_time" in _names(make_retriever("auto", index).retrieve(table, 3))
    # with the caller's steps too, an implied need is one need: its one best tool
    stepped = Query("rain", rain.text, ("Get the daily weather report for Paris",))
    implied = [h for h in make_retriever("auto", index).retrieve(stepped, 5).tools if h.why.startswith("implied")]
    assert [h.tool.name for h in implied] == ["write_file"]


def test_grtf_can_follow_structural_links(index):
    menu = Query("menu", "Show me the menu of Luigi's restaurant")
    plain = make_retriever("grtf", index, seeds=1, kinds=[]).retrieve(menu, 2)
    linked = make_retriever("grtf", index, seeds=1, kinds=[], links=["sharesParametersWith"]).retrieve(menu, 2)
    assert _names(plain)[0] == _names(linked)[0] == "get_restaurant_menu"
    assert linked.tools[1].why == "sharesParametersWith of get_restaurant_menu" != plain.tools[1].why


def test_a_tool_is_reached_through_its_server(index):
    rain = Query("rain", "Will it rain in Paris tomorrow? I need the weather forecast.")
    assert _names(make_retriever("bm25", index).retrieve(rain, 3))[:1] != ["get_daily_report"]
    ranking = make_retriever("agent", index).retrieve(rain, 3)
    assert ranking.servers[0][0] == "skycast"
    assert "get_daily_report" in _names(ranking)


def test_ego_graphs_collect_tools_around_matching_entities(index):
    ranking = make_retriever("ego", index).retrieve(BOOK, 3)
    assert _names(ranking)[0] == "tablefinder_book_table"
    assert "ego graphs" in ranking.tools[0].why


def test_step_wise_query_gives_every_step_its_tool(index):
    memo = Query("pdf", "Write a memo and send it to me as a PDF", ("Create a new word document", "Convert it to PDF"))
    for method in ("bm25", "dense", "grtf", "agent", "auto"):
        names = _names(make_retriever(method, index).retrieve(memo, 3))
        assert {"create_document", "convert_to_pdf"} <= set(names), (method, names)


def test_dense_through_an_embeddings_endpoint_is_cached(store, monkeypatch, tmp_path):
    import shutil

    from tests.support.fake_openai import FakeOpenAI

    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    with FakeOpenAI() as fake:
        monkeypatch.setenv("TOOLKG_EMBED_BASE_URL", fake.base_url)
        monkeypatch.setenv("TOOLKG_EMBED_MODEL", "fake-embedder")
        first = Index(copy)
        ranking = make_retriever("dense", first).retrieve(Query("q", "rate a restaurant with stars"), 1)
        first.close()
        assert _names(ranking) == ["rate_restaurant"]
        catalog_requests = [r for r in fake.embedding_requests if len(r["input"]) > 1]
        assert len(catalog_requests) == 1 and fake.embedding_requests[0]["model"] == "fake-embedder"
        again = Index(copy)
        make_retriever("dense", again).retrieve(Query("q", "reserve a table"), 1)
        again.close()
        # the catalog's vectors came from the cache: only the new query went to the endpoint
        assert [r["input"] for r in fake.embedding_requests[1 + 1 :]] == [["reserve a table"]]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.text(min_size=0, max_size=80),
    weights=st.lists(st.floats(-50, 50, allow_nan=False), min_size=12, max_size=12),
)
def test_fused_ranking_is_a_ranking_of_every_candidate_for_any_text_and_weights(index, text, weights):
    """Whatever the request and the weights: each candidate once, best first, finite scores, and every tool
    of dense's top 100 among them (the fusion re-orders the candidates; it never loses one)."""
    from toolkg.retrieval.base import top
    from toolkg.retrieval.fusion import candidates, ranking

    index.begin_query([text])
    found = candidates(index, text)
    ranked = ranking(found, tuple(weights))
    positions = [p for p, _ in ranked]
    scores = [s for _, s in ranked]
    assert len(positions) == len(set(positions)) == len(found.positions)
    assert all(math.isfinite(s) for s in scores) and scores == sorted(scores, reverse=True)
    assert set(top(index.tool_vectors @ index.embed(text), 100)) <= set(positions)


@pytest.mark.slow  # embeds the catalog's probes (a few seconds)
def test_probes_are_made_once_and_read_back_from_the_store_cache(store, monkeypatch):
    """Issue 52: the catalog's probe queries are made at the first query and kept in ``<store>/cache``; a
    later process reads them back (nothing embedded) with the same figures, so the blend is the same."""
    from toolkg.paths import store_cache
    from toolkg.retrieval.auto import AutoRetriever
    from toolkg.retrieval.probes import catalog_probes

    first = Index(store)
    try:
        retriever = AutoRetriever(first)
        retriever.search("reserve a table for dinner", 3)
        made = catalog_probes(first, store)
        choice = retriever.choice.describe()
    finally:
        first.close()
    assert made and store_cache(store, "probes").exists()
    again = Index(store)
    try:
        monkeypatch.setattr(again, "encode_texts", lambda texts: pytest.fail("probes embedded again"))
        read = catalog_probes(again, store)
        assert [t for _, t in read] == [t for _, t in made]
        assert all(np.array_equal(a.positions, b.positions) for (a, _), (b, _) in zip(read, made, strict=True))
        assert AutoRetriever(again).choice.describe() == choice
    finally:
        again.close()
