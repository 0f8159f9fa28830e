"""One declared pipeline: ``toolkg.flows.stages.PIPELINE`` holds every stage, once, in order, each a ``Stage``."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest

from toolkg.config import BuildConfig
from toolkg.flows.stages import CATALOG_STAGES, PIPELINE, CatalogStage
from toolkg.stages import IncrementalStage, Stage, StageBase, StageName


def test_every_stage_name_is_declared_exactly_once_in_pipeline_order():
    assert [stage.name for stage in PIPELINE] == list(StageName)


def test_each_declared_stage_implements_the_protocol():
    sections = BuildConfig.sections()
    for stage in PIPELINE:
        assert isinstance(stage, Stage), stage
        assert callable(stage.run), stage.name
        assert stage.section is None or stage.section in sections, (stage.name, stage.section)
        fingerprint = stage.fingerprint()
        assert len(fingerprint) == 16 and fingerprint == stage.fingerprint(), stage.name


def test_each_stage_names_code_that_exists_and_an_enclosing_stage_that_is_declared():
    """A module missing from ``code`` would hash as nothing (``source_fingerprint`` skips it): a stage whose code
    changed would look unchanged."""
    declared = {stage.name for stage in PIPELINE}
    for stage in PIPELINE:
        assert isinstance(stage, StageBase) and stage.code, stage.name
        for module in stage.code:
            assert importlib.util.find_spec(module) is not None, (stage.name, module)
        if stage.part_of is not None:
            assert stage.part_of in declared - {stage.name}, (stage.name, stage.part_of)


def test_the_catalog_stages_are_the_declared_ones_and_follow_incremental_sync():
    assert CATALOG_STAGES == tuple(s for s in PIPELINE if isinstance(s, CatalogStage))
    assert [s.name for s in CATALOG_STAGES] == [
        StageName.CANONICALIZE,
        StageName.INFER,
        StageName.LINK,
        StageName.AUDIT,
        StageName.INDEX,
    ]
    assert all(isinstance(s, IncrementalStage) for s in CATALOG_STAGES)
    assert not any(isinstance(s, IncrementalStage) for s in PIPELINE if s not in CATALOG_STAGES)


def test_the_protocol_check_is_not_vacuous():
    """An object lacking part of the contract (here ``run``, or the fingerprint) is no ``Stage``."""

    class NoRun(StageBase):
        name = StageName.LOAD

    class NoFingerprint:
        name = StageName.LOAD
        section = None
        part_of = None

        def run(self, *args: Any) -> None:
            return None

    assert not isinstance(NoRun(), Stage)
    assert not isinstance(NoFingerprint(), Stage)


def test_stage_results_enter_the_summary_by_folding():
    """The pipeline writes no stage's figures into the summary itself: each stage's typed result is folded
    (``BuildSummary.fold``): lists extended (a path once; a live server's report, a dict, as given), numbers
    added."""
    from toolkg.flows.stages.listing import ListInfo
    from toolkg.flows.stages.snapshot import SnapshotInfo
    from toolkg.flows.steps import FoundInfo, ManifestOutcome, StoreInfo
    from toolkg.models import QuarantinedItem
    from toolkg.summary import BuildSummary

    summary = BuildSummary(run_id="r", store="s", started="t")
    report = {"server": "shop", "status": "new", "tools": 2}
    failed = QuarantinedItem(source="shop", item="shop", stage=StageName.LIST, reason="timed out")
    for _ in range(2):
        summary.fold(ListInfo(live=(report,), live_skipped=(), quarantined=(failed,)))
    summary.fold(FoundInfo(files=3))
    summary.fold(ManifestOutcome(path="a.json", outcome="new"))
    summary.fold(ManifestOutcome(path="b.json", outcome="rebuilt"))
    summary.fold(StoreInfo(orphans_dropped=1))
    summary.fold(StoreInfo(totals={"tools": 5}))
    summary.fold(SnapshotInfo(snapshot="r"))
    summary.fold(ManifestOutcome(path="a.json", outcome="new"))
    assert summary.live == [report, report] and summary.quarantined == [failed, failed]
    assert (summary.manifests_seen, summary.new, summary.rebuilt, summary.changed) == (3, ["a.json"], ["b.json"], [])
    assert (summary.orphans_dropped, summary.totals, summary.kept, summary.snapshot) == (1, {"tools": 5}, [], "r")


def test_a_stage_result_reads_back_typed_from_the_summary_and_its_json():
    from toolkg.flows.stages.audit import AuditFigures, AuditInfo
    from toolkg.flows.stages.link import LinkInfo
    from toolkg.summary import BuildSummary

    summary = BuildSummary(run_id="r", store="s", started="t")
    info = AuditInfo(findings=AuditFigures(tools=3, flagged=1, by_kind={"injection": 1}, notes=1))
    summary.fold(info)
    text = summary.model_dump_json()
    figures = {"findings": {"tools": 3, "flagged": 1, "by_kind": {"injection": 1}, "notes": 1}}
    assert json.loads(text)["stages"]["audit"] == figures  # the JSON's shape: figures under the stage's name
    again = BuildSummary.model_validate_json(text)
    assert again.result(AuditInfo) == info and again.result(LinkInfo) is None
    assert "findings: 1 of 3 tools flagged (1 injection); 1 with notes only" in str(again)


def test_each_catalog_stage_names_its_result_and_the_summary_keeps_it_under_that_name():
    """The name is stated once, on the stage: its result class takes it from the stage (``StageBase.result``)."""
    results = [stage.result for stage in CATALOG_STAGES]
    assert all(result is not None for result in results)
    assert [result.stage for result in results if result] == [stage.name for stage in CATALOG_STAGES]
    assert len(set(results)) == len(results)


def test_a_result_belongs_to_one_stage():
    from toolkg.flows.stages.audit import AuditInfo

    with pytest.raises(TypeError, match="already the result of stage 'audit'"):

        class Other(StageBase):
            name = StageName.LINK
            result = AuditInfo

    assert AuditInfo.stage == StageName.AUDIT


def test_the_code_of_each_per_manifest_stage_and_only_theirs_is_in_every_manifest_fingerprint(monkeypatch):
    """New code in a stage that makes a manifest's graphs rebuilds the manifests (their fingerprint changes);
    new code in any other stage leaves them (that stage follows its own digest, ``CatalogStage.digest``)."""
    from toolkg.extractors.triples.semantic import make_extractor
    from toolkg.flows.stages import MANIFEST_STAGES, manifest_code
    from toolkg.models import ManifestFile
    from toolkg.store.loading import BuildOptions, fingerprint

    per_manifest = [StageName.READ, StageName.INGEST, StageName.EXTRACT, StageName.EXTRACT_SEMANTIC]
    assert [s.name for s in MANIFEST_STAGES] == [*per_manifest, StageName.VALIDATE, StageName.LOAD]
    file, extractor = ManifestFile(path="/a.json", sha256="0" * 64, size=2), make_extractor("offline", None)

    def manifest_fingerprint() -> str:
        return fingerprint(file, BuildOptions.of(BuildConfig(), extractor, manifest_code()))

    before = manifest_fingerprint()
    assert manifest_fingerprint() == before  # the same code, the same fingerprint
    for stage in PIPELINE:
        with monkeypatch.context() as patched:
            patched.setattr(type(stage), "fingerprint", lambda self: "new code")
            assert (manifest_fingerprint() != before) == (stage in MANIFEST_STAGES), stage.name


def test_the_summary_s_top_level_figures_follow_the_figure_not_the_stage_name():
    """``inferred``, ``links``, ``canonical`` read whichever stage reports them: no stage name in summary.py."""
    from toolkg.summary import BuildSummary

    figures = {"renamed-infer": {"inferred": {"total": 2}}, "other": {"links": {"total": 5}}}
    summary = BuildSummary(run_id="r", store="s", started="t", stages=figures)
    assert (summary.inferred, summary.links, summary.canonical) == ({"total": 2}, {"total": 5}, {})
    assert json.loads(summary.model_dump_json())["inferred"] == {"total": 2}
    with pytest.raises(AssertionError, match="two stages report the figure 'links'"):
        _ = BuildSummary(run_id="r", store="s", started="t", stages={**figures, "x": {"links": {}}}).links
