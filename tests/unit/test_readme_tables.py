"""The READMEs' marked tables are what ``python -m benchmarks.tables`` renders from the committed results JSON:
a figure edited by hand, or a JSON re-run without its table, fails here."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks import tables


def _readme_text() -> str:
    return "".join(path.read_text(encoding="utf-8") for path in tables.READMES)


def test_every_table_is_marked_once_and_its_json_is_committed():
    """Else the check below passes on a table nobody marked, or on a JSON only this machine has."""
    text = _readme_text()
    for name, table in tables.TABLES.items():
        assert text.count(f"<!-- table:{name} -->") == 1, name
        source = tables.RESULTS / table.source
        tracked = subprocess.run(
            ["git", "ls-files", "--error-unmatch", str(source)], cwd=tables.ROOT, capture_output=True
        )
        assert tracked.returncode == 0, f"{source.relative_to(tables.ROOT)} is not committed"
    assert [m["name"] for m in tables.BLOCK.finditer(text)] != []


def test_the_committed_tables_are_what_their_json_renders():
    for path in tables.READMES:
        _, changed = tables.rendered(path.read_text(encoding="utf-8"))
        assert changed == [], f"{path.name}: {changed} differ; run python -m benchmarks.tables"
    assert tables.main(["--check"]) == 0


def test_a_figure_edited_by_hand_is_caught_and_put_back():
    text = (tables.ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    edited = text.replace("| 0.842 / 0.676 |", "| 0.852 / 0.676 |", 1)
    assert edited != text
    put_back, changed = tables.rendered(edited)
    assert changed == ["inference"]
    assert put_back == text


def test_a_carried_column_is_kept_and_the_rendered_ones_follow_the_json(tmp_path: Path):
    """suite-s56's ``before`` comes from no committed JSON: the cell stays as written; a re-run JSON moves the
    other cells."""
    for table in tables.TABLES.values():
        shutil.copy(tables.RESULTS / table.source, tmp_path / table.source)
    data = json.loads((tmp_path / "suite-s56.json").read_text(encoding="utf-8"))
    data["reports"]["tau2"]["methods"]["bm25"]["metrics"]["recall"]["10"] = 0.5114
    (tmp_path / "suite-s56.json").write_text(json.dumps(data), encoding="utf-8")
    text = (tables.ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    row = "| tau2 (142) | 0.469 / 0.268 | 0.469 / 0.268 |"
    assert row in text
    hand_edited = text.replace(row, "| tau2 (142) | 0.469 / 0.268 | 0.111 / 0.222 |")
    new, changed = tables.rendered(hand_edited, tmp_path)
    assert changed == ["suite-s56"]
    assert "| tau2 (142) | 0.469 / 0.268 | 0.111 / 0.222 | 0.463 / 0.275 | 0.477 / 0.261 | 0.511 / 0.303 |" in new


def test_a_marker_naming_no_table_is_an_error():
    with pytest.raises(KeyError, match="no-such"):
        tables.rendered("<!-- table:no-such -->\n| a |\n<!-- /table -->\n")
