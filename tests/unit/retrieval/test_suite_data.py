"""The retrieval suite's catalogs (data/<set>/, made by benchmarks/suite/prepare.py) read cleanly, and every
gold tool of their labelled queries is a tool of the catalog: a query whose answer is not there scores 0
for every method and would hide a conversion bug behind a low figure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.reading import discover_all, fingerprint_file
from toolkg.retrieval.metrics import gold_tools, matches

ROOT = Path(__file__).resolve().parents[3]
SETS = {
    "bfcl": (1287, 2351),
    "azure-mcp": (235, 464),
    "apibench": (1726, 1703),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SETS))
def test_suite_catalog_reads_whole_and_answers_every_query(name):
    folder = ROOT / "data" / name
    assert (folder / "LICENSE").is_file() and (folder / "SOURCE.md").is_file()
    ids = []
    for path in discover_all([str(folder)]).files:
        file, data = fingerprint_file(Path(path), None)
        result = ingest_manifest(file, data)
        assert not result.quarantined, [q.reason for q in result.quarantined[:3]]
        ids += [t.id for s in result.parsed.servers for t in s.tools]
    tools, queries = SETS[name]
    assert len(ids) == len(set(ids)) == tools
    rows = [json.loads(line) for line in (folder / "queries.jsonl").open(encoding="utf-8")]
    assert len(rows) == queries and len({r["id"] for r in rows}) == queries
    for row in rows:
        assert row["query"].strip() and row["gold_tools"]
        for gold in gold_tools(row):
            assert any(matches(i, gold.accepted) for i in ids), (row["id"], gold.name)
    split = json.loads((ROOT / "data" / "splits" / f"{name}.json").read_text())
    assert sorted(split["tune"] + split["report"]) == sorted(r["id"] for r in rows)


DEPENDENCY_LABELS = {  # label set -> (positives, negatives), data/dependency-labels/README.md
    "livemcpbench": (317, 69),
    "mcp-servers": (138, 37),
    "bfcl-multi-turn": (181, 53),
    "azure-mcp": (266, 74),
    "github-openapi": (223, 59),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(DEPENDENCY_LABELS))
def test_dependency_labels_name_real_tools_and_parameters(name):
    """Every labelled pair names two tools of its catalog, as a build names them, and a parameter the consumer
    takes: a label that names nothing would count as a miss for every inference and hide a renamed id."""
    from benchmarks.label_sets import label_set_tools, read_labels

    tools = {t.id: t for t in label_set_tools(name)}
    labels = read_labels(name)
    from toolkg.ontology.vocabulary import DEPENDENCY_KINDS as kinds

    seen = set()
    for x in labels:
        assert x["consumer"] in tools and x["producer"] in tools and x["consumer"] != x["producer"], x
        assert x["kind"] in kinds and x["label"] in ("positive", "negative") and x["evidence"].strip(), x
        if x["parameter"] is not None:
            assert x["parameter"] in {p.name for p in tools[x["consumer"]].parameters}, x
        key = (x["consumer"], x["producer"], x["parameter"])
        assert key not in seen, key
        seen.add(key)
    counts = (sum(x["label"] == "positive" for x in labels), sum(x["label"] == "negative" for x in labels))
    assert counts == DEPENDENCY_LABELS[name]


AUDITS = {"livemcpbench": (140, 60), "mcp-servers": (67, 31), "bfcl-multi-turn": (90, 14), "azure-mcp": (140, 17),
          "github-openapi": (140, 39)}  # fmt: skip  # verdicts, correct: data/dependency-labels/README.md


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(AUDITS))
def test_audit_verdicts_judge_real_unlabelled_pairs_once(name):
    """Every blind-audit verdict names two tools of its catalog and a pair no label judges (the audit
    estimates precision only where the labels are silent), once, with a reason; counts as the README states."""
    import json

    from benchmarks.label_sets import label_set_tools, read_labels

    tools = {t.id for t in label_set_tools(name)}
    labelled = {(x["consumer"], x["producer"]) for x in read_labels(name)}
    path = ROOT / "data" / "dependency-labels" / "audit" / f"{name}.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    pairs = [(x["consumer"], x["producer"]) for x in rows]
    assert len(pairs) == len(set(pairs))
    for x, pair in zip(rows, pairs, strict=True):
        assert x["consumer"] in tools and x["producer"] in tools and pair not in labelled, x
        assert x["verdict"] in ("correct", "wrong") and x["reason"].strip(), x
    assert (len(rows), sum(x["verdict"] == "correct" for x in rows)) == AUDITS[name]


CONVERSATIONAL = {  # set -> (manifests' folder, tools, queries), benchmarks/suite/conversational.py
    "bfcl-multi-turn": ("tests/cases/real/openai/bfcl-multi-turn", 162, 731),
    "tau2": ("tests/cases/real/openai/tau2", 72, 269),
}


@pytest.mark.parametrize("name", sorted(CONVERSATIONAL))
def test_conversational_sets_answer_every_query_and_keep_a_conversation_in_one_half(name):
    """The suite's conversational queries name tools their catalog has, and the turns of one conversation
    all fall in one half (a turn's half is its conversation's)."""
    from benchmarks.suite.catalogs import SETTINGS, rows_of
    from benchmarks.suite.conversational import rows

    folder, tools, queries = CONVERSATIONAL[name]
    assert (ROOT / "data" / name / "LICENSE").is_file() and (ROOT / "data" / name / "SOURCE.md").is_file()
    ids = []
    for path in discover_all([str(ROOT / folder)]).files:
        file, data = fingerprint_file(Path(path), None)
        result = ingest_manifest(file, data)
        assert not result.quarantined, [q.reason for q in result.quarantined[:3]]
        ids += [t.id for s in result.parsed.servers for t in s.tools]
    assert len(ids) == len(set(ids)) == tools
    found = rows(name)
    assert len(found) == queries and len({r["id"] for r in found}) == queries
    for row in found:
        assert row["query"].strip() and row["gold_tools"]
        assert all(g in ids for g in row["gold_tools"]), row["id"]
    # the suite's halves: every query in one of them, no conversation in both
    tune, report = (rows_of(SETTINGS[name], h) for h in ("tune", "report"))
    assert len(tune) + len(report) == queries and tune and report
    assert not {r["group"] for r in tune} & {r["group"] for r in report}
