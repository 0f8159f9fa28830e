"""The READMEs' marked tables are what ``python -m benchmarks.tables`` renders from the committed results JSON:
a figure edited by hand, or a JSON re-run without its table, fails here."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks import bench_tables, tables


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


@pytest.mark.parametrize("name", sorted(tables.TABLES))
def test_each_table_catches_a_figure_edited_by_hand(name: str):
    """Every registered table, not only the two above: a digit changed in its last row of figures (past the first
    cell, which names the row) is reported and put back (a table never compared with its JSON would pass the
    other tests)."""
    text = _readme_text()
    block = next(m for m in tables.BLOCK.finditer(text) if m["name"] == name)

    def figure(row: str) -> int | None:
        return next((i for i, ch in enumerate(row) if ch.isdigit() and i > row.index("|", 1)), None)

    # The last row with a figure (a build case a stopped run did not reach has none).
    last = next(row for row in reversed(block["body"].rstrip("\n").split("\n")) if figure(row) is not None)
    at = figure(last)
    assert at is not None
    edited_row = last[:at] + str((int(last[at]) + 1) % 10) + last[at + 1 :]
    start = block.start("body") + block["body"].rindex(last)
    edited = text[:start] + edited_row + text[start + len(last) :]
    put_back, changed = tables.rendered(edited)
    assert changed == [name]
    assert put_back == text


def test_the_build_table_has_a_column_for_every_stage_any_case_ran():
    """A case that skips a stage (an unchanged rerun, a catalog with nothing to infer) gets a blank cell there,
    not another case's figure or a shifted row; a case a stopped run did not reach is a row saying so."""

    def case(name: str, stages: dict[str, float]) -> dict:
        return {
            "case": name, "tools": 10, "quads": 1000, "stage_seconds": stages, "pipeline_seconds": sum(stages.values()),
            "tools_per_second": 5.0, "prefect_seconds": 1.5, "rerun_wall_seconds": 0.5,
            "stage_peak_mb": {"load": 300.0, "link": 900.0}, "peak_mb": 900.0,
        }  # fmt: skip

    rows = bench_tables.build_rows(
        {
            "results": [case("a", {"ingest": 1.0, "load": 2.0}), case("b", {"ingest": 0.25, "infer": 3.0})],
            "not_run": ["c"],
        }
    )
    assert rows[0][:6] == ["case", "tools", "quads", "ingest", "load", "infer"]
    assert rows[1][3:6] == ["1.00", "2.00", ""]
    assert rows[2][3:6] == ["0.25", "", "3.00"]
    assert rows[2][-1] == "900 (link)"
    assert rows[3] == ["c", "not run", *[""] * (len(rows[0]) - 2)]
