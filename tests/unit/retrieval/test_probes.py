"""The probe queries a catalog makes of its own texts, and the floor the first stage's blend keeps on them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkg.retrieval.catalog import Catalog, ToolDoc
from toolkg.retrieval.choice import (
    FLOOR_K,
    SIGNALS,
    EvidenceMap,
    blended_ranking,
    choose,
    grid,
    probe_figures,
)
from toolkg.retrieval.fusion import DEPTH, FUSION_FEATURES, Candidates
from toolkg.retrieval.probes import KINDS, make_probes, pack, unpack, without_name
from toolkg.text.words import split_identifier


def tool(n: int, name: str, description: str, parameters: dict[str, str]) -> ToolDoc:
    return ToolDoc(
        iri=f"urn:t:{n}",
        id=f"mail-server::{name}",
        server="mail-server",
        name=name,
        description=description,
        parameters=tuple(parameters),
        parameter_descriptions=tuple(parameters.values()),
    )


CATALOG = Catalog(
    [
        tool(
            0,
            "send_email",
            "Sends an email message to the given recipients. Fails on bad addresses.",
            {"to": "The recipient addresses of the message"},
        ),
        tool(
            1,
            "list_folders",
            "Lists the folders of a mailbox with their unread counts.",
            {"mailbox": "Which mailbox to look in"},
        ),
        tool(
            2, "get_weather", "Tells the forecast for a city over the next days.", {"city": "City name"}
        ),  # 2 words: no parameter probe
        tool(3, "ping", "Ping.", {}),  # nothing to ask: too short
    ],
    servers=[],
)
PARAPHRASES = {"urn:t:0": "send email recipient", "urn:t:2": "read forecast city", "urn:t:3": "ping"}


def test_probes_are_the_tools_own_texts_without_their_names_in_turn_by_kind_and_seeded():
    probes = make_probes(CATALOG, PARAPHRASES, size=50, seed=3)
    by_kind = {kind: [p for p in probes if p.kind == kind] for kind in KINDS}
    assert {p.tool for p in by_kind["description"]} == {0, 1, 2}  # "Ping." is too short to ask anything
    assert {p.tool for p in by_kind["parameter"]} == {0, 1}  # "City name": two words
    assert {p.tool for p in by_kind["capability"]} == {0, 2}  # a one-word paraphrase asks nothing
    for probe in probes:
        names = set(split_identifier(CATALOG.tools[probe.tool].name)) | {"mail", "server"}
        words = {w.strip(".,").lower() for w in probe.text.split()}
        if probe.kind != "capability":  # the extractor's paraphrase may use a name's words: it is not the text
            assert not words & names, probe
    first_description = next(p for p in by_kind["description"] if p.tool == 0)
    assert first_description.text == "an message to the given recipients."  # the first sentence only
    assert [p.kind for p in probes[:3]] == list(KINDS)  # the kinds in turn
    assert make_probes(CATALOG, PARAPHRASES, size=50, seed=3) == probes
    assert len(make_probes(CATALOG, PARAPHRASES, size=4)) == 4


def test_without_name_compares_words_as_search_tokens():
    assert without_name("Lists the users of a GitHub repository", ["list_users", "github"]) == "the of a repository"
    assert without_name("Sends e-mail", []) == "Sends e-mail"


# ---- the floor, on random candidate lists -------------------------------------------------------------------


@st.composite
def probe_lists(draw):
    """Probes with random candidates: each a list of tools with their cosines and BM25 scores (and ranks
    consistent with them), the probe's tool one of them or none."""
    made = []
    for _ in range(draw(st.integers(1, 12))):
        n = draw(st.integers(1, 25))
        cosine = np.array(draw(st.lists(st.floats(-1, 1, allow_nan=False), min_size=n, max_size=n)))
        bm25 = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5, 7.0]), min_size=n, max_size=n)))
        positions = np.array(draw(st.permutations(range(40)))[:n], dtype=np.int64)
        dense_rank = np.empty(n)
        dense_rank[np.lexsort((positions, -cosine))] = np.arange(1, n + 1)
        bm25_rank = np.full(n, DEPTH + 1.0)
        matched = np.flatnonzero(bm25 > 0)
        bm25_rank[matched[np.lexsort((positions[matched], -bm25[matched]))]] = np.arange(1, len(matched) + 1)
        found = Candidates(positions, cosine, dense_rank, bm25, bm25_rank, float(cosine.max()), float(bm25.max()), 5)
        target = draw(st.one_of(st.sampled_from(positions.tolist()), st.just(99)))
        made.append((found, target))
    return made


def single_signal_hits(made, signal: int) -> float:
    """How often dense alone (1) or BM25 alone (2), as toolkg's own methods rank, has the probe's tool in its
    top FLOOR_K."""
    hits = 0
    for found, target in made:
        ranks = found.dense_rank if signal == 1 else found.bm25_rank
        at = np.flatnonzero(found.positions == target)
        hits += bool(len(at)) and ranks[at[0]] <= min(FLOOR_K, DEPTH)
    return hits / len(made)


def blend_hits(made, fusion, weights) -> float:
    """How often the first stage's own ranking (``blended_ranking``, what a query gets) has it there."""
    hits = 0
    for found, target in made:
        top = [position for position, _ in blended_ranking(found, fusion, weights)[:FLOOR_K]]
        hits += target in top
    return hits / len(made)


fusions = st.lists(
    st.floats(-5, 5, allow_nan=False), min_size=len(FUSION_FEATURES) + 1, max_size=len(FUSION_FEATURES) + 1
)
maps = st.builds(
    EvidenceMap,
    st.sampled_from([0.0, 5.0, 20.0, 80.0]),
    st.tuples(st.just(0.0), st.sampled_from([-0.3, -0.1, 0.0, 0.2]), st.sampled_from([-0.3, 0.0, 0.1, 0.3])),
)


@pytest.mark.slow  # a few hundred random catalogs of probes
@settings(max_examples=150, deadline=None)
@given(made=probe_lists(), fusion=fusions, mapping=maps)
def test_the_chosen_blend_is_never_below_the_better_single_signal_on_the_probes(made, fusion, mapping):
    """Whatever the candidates, the fusion weights and the map: on the probes, the first stage's top k (as a
    query ranks it) finds the probes' tools at least as often as dense or BM25 alone, each figure taken as
    the map's offsets correct it; with no offsets, the raw figures."""
    fusion = tuple(fusion)
    choice = choose(probe_figures(made, fusion), mapping)
    offsets = np.asarray(mapping.offsets)
    ours = blend_hits(made, fusion, choice.weights) + float(choice.weights @ offsets)
    for signal in (1, 2):
        assert ours >= single_signal_hits(made, signal) + offsets[signal] - 1e-9, (SIGNALS[signal], choice)
    if not offsets.any():
        assert blend_hits(made, fusion, choice.weights) >= max(single_signal_hits(made, s) for s in (1, 2)) - 1e-9
    assert any(np.allclose(choice.weights, point) for point in grid())


def test_the_floor_holds_when_the_map_trusts_a_fusion_that_loses_on_the_probes():
    """The fused ranking (here: BM25's order) puts half the probes' tools first and the rest at 30; dense has
    every one at 8. The map goes by MRR and trusts the fusion (0.5 against dense's 0.125); the floor sees
    dense find all of them in its top 10 and moves the blend until it is not below dense's figure."""
    made = []
    for n in range(10):
        positions = np.arange(30, dtype=np.int64)
        dense_rank = np.array([8.0, *[r for r in range(1, 31) if r != 8]])
        bm25_rank = np.array([1.0 if n % 2 else 30.0, *[r for r in range(1, 31) if r != (1 if n % 2 else 30)]])
        found = Candidates(positions, np.zeros(30), dense_rank, 31 - bm25_rank, bm25_rank, 0.0, 30.0, 4)
        made.append((found, 0))
    by_bm25 = [0.0] * (len(FUSION_FEATURES) + 1)
    by_bm25[FUSION_FEATURES.index("log_bm25_rank")] = -1.0
    mapping = EvidenceMap(80.0, (0.0, -0.3, -0.3))
    figures = probe_figures(made, tuple(by_bm25))
    assert figures.hits.tolist() == [0.5, 1.0, 0.5] and mapping.weights(figures.mrr).tolist() == [1.0, 0.0, 0.0]
    choice = choose(figures, mapping)
    assert choice.floor is not None and choice.weights[1] > 0, choice
    assert blend_hits(made, tuple(by_bm25), choice.weights) - 0.3 * (1 - choice.weights[0]) >= 1.0 - 0.3 - 1e-9
    assert "floor" in choice.describe()
    assert choose(figures, None).weights.tolist() == [1.0, 0.0, 0.0]  # no map: the fused ranking, as before
    raw = choose(figures, EvidenceMap(80.0, (0.0, 0.0, 0.0)))  # no offsets: the raw floor, dense alone here
    assert blend_hits(made, tuple(by_bm25), raw.weights) == 1.0


def test_probe_candidates_survive_the_cache_archive_exactly():
    positions = np.array([4, 1, 9], dtype=np.int64)
    found = Candidates(positions, np.array([0.3, 0.2, 0.1]), np.array([1.0, 2, 3]), np.array([0, 2.5, 1]),
                       np.array([101.0, 1, 2]), 0.3, 2.5, 7)  # fmt: skip
    again = unpack(pack([(found, 9), (found, 1)]))
    assert [t for _, t in again] == [9, 1]
    for name in ("positions", "cosine", "dense_rank", "bm25", "bm25_rank"):
        assert np.array_equal(getattr(again[0][0], name), getattr(found, name))
    assert (again[1][0].best_cosine, again[1][0].best_bm25, again[1][0].words) == (0.3, 2.5, 7)


@pytest.mark.parametrize(
    "archive",
    [
        b"not an archive",
        b"PK\x03\x04" + b"\x00" * 40,  # a zip header and nothing behind it
        "sizes-tools-mismatch",
    ],
)
def test_a_cache_that_does_not_read_back_is_made_again(tmp_path, archive) -> None:
    """A store may come from anyone: its probes cache is data, and one that does not unpack is a miss."""
    import io
    import sqlite3

    from toolkg.retrieval.probes import ProbeCache

    if archive == "sizes-tools-mismatch":  # arrays that parse but do not fit together
        out = io.BytesIO()
        np.savez(out, sizes=np.array([5, 5]), tools=np.array([1, 2, 3]), positions=np.array([1]))
        archive = out.getvalue()
    cache = ProbeCache(tmp_path)
    cache.path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(cache.path) as db:
        db.execute("CREATE TABLE probes (key TEXT PRIMARY KEY, value BLOB)")
        db.execute("INSERT INTO probes VALUES (?, ?)", ("k", archive))
    assert cache.get("k") is None
