"""Producers compete for a slot by confidence; none is claimed by a rule (canonicalize/inference/competition.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolkg.canonicalize.inference.competition import compete
from toolkg.canonicalize.inference.profiles import PARAMETER_DIRECT, TOOL_DIRECT
from toolkg.models import InferredEdge


def _edge(producer: str, confidence: float, parameter: str | None = "pet_id", rule: str = "r") -> InferredEdge:
    kind = PARAMETER_DIRECT if parameter else TOOL_DIRECT
    return InferredEdge("s::get_pet", producer, kind, parameter, confidence, rule, "")


def test_a_slot_keeps_its_most_confident_producers_whatever_rule_proposed_them():
    edges = [
        _edge("s::list_pets", 0.8, rule="rest-collection"),
        _edge("s::search_pets", 0.75, rule="typed-join"),
        _edge("s::create_pet", 0.6, rule="rest-collection"),
        _edge("other::pets", 0.75, rule="output-to-parameter"),
        _edge("s::login", 0.9, parameter=None),  # tool-level: no slot, never capped
    ]
    kept = {(e.producer, e.parameter) for e in compete(edges, 2)}
    # the same-server producer wins the tie at 0.75
    assert kept == {("s::list_pets", "pet_id"), ("s::search_pets", "pet_id"), ("s::login", None)}
    assert compete(edges, 5) == edges


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["s::a", "s::b", "s::c", "t::d", "t::e"]), st.floats(0.5, 1.0), st.sampled_from(["p", "q"])
        ),
        max_size=20,
    ),
    st.integers(1, 4),
)
def test_no_slot_keeps_more_than_the_cap_and_a_kept_producer_beats_every_dropped_one(raw, cap):
    edges = [_edge(producer, round(conf, 2), parameter) for producer, conf, parameter in raw]
    kept = compete(edges, cap)
    assert [e for e in edges if e in kept] == kept  # in their order
    for slot in {e.parameter for e in edges}:
        mine = [e for e in edges if e.parameter == slot]
        winners = {e.producer for e in kept if e.parameter == slot}
        assert len(winners) == min(cap, len({e.producer for e in mine}))
        best = {p: max(e.confidence for e in mine if e.producer == p) for p in {e.producer for e in mine}}
        for loser in best.keys() - winners:
            assert all(best[w] >= best[loser] for w in winners)
