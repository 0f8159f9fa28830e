"""Tables and plots fit the terminal: cut cells, literal markup, the window's width, the eval plot (no build)."""

from __future__ import annotations

import json

from tests.support.terminal import LONG, assert_fits, second_column
from toolkg.cli.render import MAX_WIDTH, table, terminal_width


def test_table_cuts_long_cells_to_the_width_and_keeps_numbers_whole():
    text = table(["tool", "description", "count"], [["get_order", LONG, "123456"], ["東京", "short", "7"]], width=60)
    lines = text.split("\n")
    assert len(lines) == 4  # header, rule, one line per row: nothing wraps
    assert_fits(text, 60, "table")
    assert lines[2].endswith("123456") and lines[3].endswith("     7")  # right-aligned, never cut
    assert "…" in lines[2] and lines[2].startswith("get_order  Returns the weather")
    assert len({second_column(line) for line in lines}) == 1


def test_table_prints_markup_and_emoji_codes_literally():
    text = table(["tool"], [["[bold]x[/bold]"], [":smile:"], ["http://example.com"]])
    assert text.split("\n")[2:] == ["[bold]x[/bold]", ":smile:", "http://example.com"]
    assert "\x1b" not in text


def test_terminal_width_is_the_window_up_to_120(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert terminal_width() == MAX_WIDTH
    monkeypatch.setenv("COLUMNS", "80")
    assert terminal_width() == 80


def _report(ks: list[int]) -> dict:
    same = {k: 0.5 + 0.01 * k for k in ks}  # dense and agent score the same: dense must still show
    methods = {
        name: {"metrics": {"recall": dict(values), "map": dict(values)}, "latency_ms": {"p50": 1, "p95": 2, "mean": 1}}
        for name, values in (("auto", {k: 0.9 for k in ks}), ("agent", same), ("dense", same), ("bm25", same))
    }
    return {"queries": 3, "k": ks, "methods": methods}


def test_plot_ticks_are_the_ks_and_every_method_is_drawn_apart(tmp_path):
    from toolkg.retrieval.evaluate import plot, write_outputs

    ks = [3, 5, 10, 20]
    report = _report(ks)
    figure = plot(report)
    panels = [axis for axis in figure.axes if axis.get_title()]
    assert [axis.get_title() for axis in panels] == ["recall", "map"]
    for axis in panels:
        assert list(axis.get_xticks()) == ks
        assert [label.get_text() for label in axis.get_xticklabels()] == ["3", "5", "10", "20"]
        lines = {line.get_label(): line for line in axis.get_lines()}
        assert set(lines) == {"auto", "agent", "dense", "bm25"}
        looks = {(line.get_color(), line.get_marker(), line.get_linestyle()) for line in lines.values()}
        assert len(looks) == 4  # colour, marker and dash pattern: no two methods alike
        assert list(lines["dense"].get_ydata()) == [report["methods"]["dense"]["metrics"]["recall"][k] for k in ks]
        # the same scores: dense lies on top of agent, thinner, so both show
        assert lines["dense"].get_zorder() > lines["agent"].get_zorder()
        assert lines["dense"].get_linewidth() < lines["agent"].get_linewidth()
    legends = [*figure.legends, *(axis.get_legend() for axis in figure.axes if axis.get_legend())]
    assert len(legends) == 1 and [t.get_text() for t in legends[0].get_texts()] == ["auto", "agent", "dense", "bm25"]

    import matplotlib.image

    write_outputs(report, tmp_path / "eval.json", tmp_path / "eval.png")
    assert matplotlib.image.imread(tmp_path / "eval.png").shape[2] == 4  # a real RGBA picture
    assert json.loads((tmp_path / "eval.json").read_text()) == json.loads(json.dumps(report))  # the report as is
