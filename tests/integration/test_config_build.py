"""Changed build options rerun only the stage they belong to."""

from __future__ import annotations

from tests.conftest import CASES


def test_changed_options_rerun_only_the_stage_they_belong_to(build, tmp_path):
    """An unchanged catalog rebuilt with other inference options re-infers; nothing else reruns."""
    catalog, store = CASES / "openai_tools.json", tmp_path / "store"
    first = build([catalog], store, links=False)
    assert first.exit_code == 0 and "infer" in first.stage_seconds
    same = build([catalog], store, links=False)
    assert "infer" not in same.stage_seconds
    other = build([catalog], store, links=False, inference={"min_confidence": 0.9})
    assert "infer" in other.stage_seconds and "canonicalize" not in other.stage_seconds
