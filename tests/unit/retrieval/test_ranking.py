"""Ranking arithmetic without a store: the metrics against hand-computed values, the merge of graph additions."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from toolkg.retrieval.metrics import (
    Gold,
    average_precision_at,
    complete_at,
    gold_tools,
    ndcg_at,
    recall_at,
    server_recall_at,
)


def test_metrics_against_hand_computed_values():
    gold = gold_tools({"gold_tools": ["a", "s::b", "c"], "gold_tool_alternatives": {"c": ["t::c2"]}})
    ranked = ["x::a", "s::z", "t::c2", "s::b", "q::b"]
    assert recall_at(ranked, gold, 3) == pytest.approx(2 / 3)
    assert average_precision_at(ranked, gold, 5) == pytest.approx((1 / 1 + 2 / 3 + 3 / 4) / 3)
    ideal = 1 + 1 / 1.584962500721156 + 1 / 2
    assert ndcg_at(ranked, gold, 5) == pytest.approx((1 + 1 / 2 + 1 / 2.321928094887362) / ideal)
    assert (complete_at(ranked, gold, 3), complete_at(ranked, gold, 4)) == (0.0, 1.0)
    assert average_precision_at(["s::b"], [Gold("s::b", ("s::b",))], 10) == 1.0  # normalised by min(|gold|, K)
    assert recall_at(["other::b"], gold_tools({"gold_tools": ["s::b"]}), 1) == 0.0  # server-qualified gold
    assert server_recall_at(["s", "t", "u"], ["t", "v"], 2) == 0.5


@given(
    text=st.lists(st.floats(0.0, 1.0), min_size=0, max_size=12),
    graph=st.dictionaries(
        st.integers(0, 20), st.tuples(st.floats(0.0, 1.0), st.integers(0, 20), st.integers(0, 3)), max_size=10
    ),
    k=st.integers(1, 10),
    places=st.dictionaries(st.integers(0, 3), st.integers(0, 10), max_size=4),
)
# found by Hypothesis: an addition likelier than the addition it depends on was placed before it
@example(text=[0.0, 0.0], graph={0: (0.0, 0, 0), 1: (0.0, 0, 0), 12: (0.0, 0, 0), 2: (1.0, 12, 0)}, k=4, places={})
def test_merge_lets_additions_in_only_on_stronger_evidence_within_their_places(text, graph, k, places):
    from toolkg.retrieval.auto import Evidence, merge

    first = [(i, Evidence(p, i, "text")) for i, p in enumerate(text)]
    additions = {
        i: Evidence(p, n, "graph", parent=parent, seed=seed) for n, (i, (p, parent, seed)) in enumerate(graph.items())
    }
    out = merge(first, additions, k, places)
    tools = [t for t, _ in out]
    assert len(tools) == len(set(tools)) <= k
    if len(first) >= k:
        assert len(out) == k
        assert any(t in {i for i, _ in first[:k]} for t in tools)  # additions never take all of k
    # a first-stage hit of the top k that is gone was displaced by a likelier addition
    for tool, evidence in first[:k]:
        if tool not in tools:
            assert any(e.why == "graph" and e.probability > evidence.probability for _, e in out)
    # a dependency stands only with the tool that needs it
    for tool, evidence in out:
        if evidence.why == "graph" and evidence.parent is not None and tool not in {t for t, _ in first[:k]}:
            assert evidence.parent in tools, (out, tool)
    # one seed's dependencies take at most the places it has
    text_ids = {t for t, _ in first[:k]}
    for seed, allowed in places.items():
        assert sum(1 for t, e in out if t not in text_ids and e.seed == seed) <= allowed
    # the scores shown are the order followed
    scores = [e.probability for _, e in out]
    assert scores == sorted(scores, reverse=True)
    # of equal scores, an addition comes after the placed tool it depends on
    for n, (tool, evidence) in enumerate(out):
        if evidence.why == "graph" and evidence.parent in tools and evidence.parent != tool:
            parent_at = tools.index(evidence.parent)
            assert parent_at < n or out[parent_at][1].probability < evidence.probability, (out, tool)


@given(
    count=st.integers(0, 300),
    top_cosine=st.floats(-1.0, 1.0),
    kind=st.sampled_from(["whole", "step", "clause", "implied"]),
    parts=st.integers(1, 8),
    margin=st.floats(-5.0, 50.0),
)
def test_text_probabilities_at_once_equal_the_ranks_one_by_one(count, top_cosine, kind, parts, margin):
    """``text_probabilities`` (vectorised: the features are affine in log(rank)) equals ``text_probability``
    rank by rank, capped so that a worse rank is never likelier."""
    import numpy as np

    from toolkg.retrieval.calibration import load_calibration

    calibration = load_calibration()
    at_once = calibration.text_probabilities(count, top_cosine, kind, parts, margin)
    one_by_one = [calibration.text_probability(r, top_cosine, kind, parts, margin) for r in range(1, count + 1)]
    expected = np.minimum.accumulate(one_by_one) if count else np.zeros(0)
    assert np.allclose(at_once, expected, rtol=0, atol=1e-12)
    assert all(a >= b for a, b in zip(at_once, at_once[1:], strict=False))
