"""Printed names stay on their line: one_line, the printed models, tables (no build; the CLI's output is checked in
tests/e2e/test_output_safety.py)."""

from __future__ import annotations

import json

from tests.support.terminal import ESC, FORGED, RAW, RLO, assert_one_line_each
from toolkg.cli.render import table
from toolkg.display import one_line, pad, width
from toolkg.models import QuarantinedItem
from toolkg.summary import BuildSummary


def test_one_line_escapes_every_line_breaking_or_reordering_character():
    text = f"a\nb\rc\td{ESC}\x00\x7f\x85\u2028{RLO}\u2066\ud800 東京"
    shown = one_line(text)
    assert shown == "a\\nb\\rc\\td\\x1b[2J\\x00\\x7f\\u0085\\u2028\\u202e\\u2066\\ud800 東京"
    assert not RAW.search(shown) and shown.encode("utf-8")  # a lone surrogate no longer breaks the encoder
    assert one_line("plain text, 東京, ✓") == "plain text, 東京, ✓"
    cut = one_line("x" * 1000, limit=50)
    assert cut == "x" * 49 + "… (1000 chars)"


def test_quarantined_item_prints_as_one_line_and_saves_exactly(tmp_path):
    item = QuarantinedItem(source=f"/c/broken\n{FORGED}.json", item=f"s::x\n{FORGED}{ESC}", stage="parse", reason="r")
    assert str(item) == f"/c/broken\\n{FORGED}.json: s::x\\n{FORGED}\\x1b[2J: [parse] r"
    summary = BuildSummary(run_id="r1", store="s", started="now", quarantined=[item])
    assert_one_line_each(str(summary), "summary")
    assert len(str(summary).splitlines()) == 1 + len(summary._lines("  - "))
    folder = summary.save(tmp_path)
    saved = json.loads((folder / "quarantine.jsonl").read_text(encoding="utf-8"))
    assert saved["source"] == item.source and saved["item"] == item.item  # JSON keeps the exact names


def test_summary_names_entities_and_paths_on_one_line():
    from toolkg.flows.stages.canonicalize import CanonicalInfo

    summary = BuildSummary(run_id="r1", store="s", started="now", new=[f"/c/a\n{FORGED}.json"])
    largest = [[f"order\n{FORGED}{ESC}", 2, []]]
    summary.fold(CanonicalInfo(canonical={"entities": 2, "clusters": 1, "merged": 1, "largest": largest}))
    text = str(summary)
    assert_one_line_each(text, "summary", genuine=1)  # nothing was quarantined: the last line says so
    assert text.split("\n")[-1] == "  quarantined: none"
    assert "new: a\\nquarantined: none.json" in text and "largest: order\\nquarantined: none\\x1b[2J (2)" in text


def test_summary_names_tools_and_kept_servers_on_one_line():
    from toolkg.models import ToolChange

    tools = [ToolChange(tool=f"s::x\n{FORGED}{ESC}", change="changed", fields=(f"parameter 'q\n{FORGED}': type",))]
    operation = {"operation": "update-server", "target": f"s\n{FORGED}", "tools_changed": ["s::x"], "seconds": 0.1}
    operation |= dict.fromkeys(("neighbourhood", "triples_deleted", "triples_inserted"), 0)
    operation |= dict.fromkeys(("edges_added", "edges_removed", "links_added", "links_removed"), 0)
    summary = BuildSummary(
        run_id="r1", store="s", started="now", tools=tools, kept=[f"git\n{FORGED}"], only=["s"], operations=[operation]
    )
    text = str(summary)
    assert_one_line_each(text, "summary", genuine=1)
    assert f"changed s::x\\n{FORGED}\\x1b[2J: parameter 'q\\n{FORGED}': type" in text
    assert f"kept 1 server(s) no manifest under the paths defines: git\\n{FORGED}; rerun with --prune" in text


def test_tables_align_wide_characters_and_escape_cells():
    text = table(["tool", "server"], [["東京_weather", "s"], ["get_order", f"x\n{FORGED}"]])
    lines = text.split("\n")
    assert len(lines) == 4
    assert_one_line_each(text, "table")

    def second_column(line: str) -> int:  # where the second cell starts, in terminal columns
        first = line[: line.index("  ")]
        return width(first) + len(line[len(first) :]) - len(line[len(first) :].lstrip(" "))

    assert {second_column(line) for line in lines} == {width("東京_weather") + 2} == {width(pad("東京", 12)) + 2}
    assert lines[3].endswith("x\\nquarantined: none")
