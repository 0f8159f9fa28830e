"""Printed names stay on their line: one_line, the printed models, tables (no build; the CLI's output is checked in
tests/e2e/test_output_safety.py)."""

from __future__ import annotations

import csv
import io
import json
import re

from hypothesis import given
from hypothesis import strategies as st

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


# -- machine formats: no raw control character, the same text read back ----------------------------------------

# RAW but tab, which JSON, RDF and CSV lay their text out with (a tab in a value is escaped or quoted there).
UNSAFE = re.compile(RAW.pattern.replace("\x00-\x09", "\x00-\x08"))
ANY_TEXT = st.text(st.characters(blacklist_categories=["Cs"]), max_size=40)  # RDF literals hold no surrogates
HOSTILE = st.sampled_from([ESC, RLO, "\x85", "\x9b", "\x00", "\x7f", "\r", "\n", "\t", "\u2028", '"', ",", "\\"])
TEXTS = st.lists(st.one_of(ANY_TEXT, HOSTILE), max_size=6).map("".join)


def _query(text: str, sparql: str, fmt: str) -> str:
    import pyoxigraph

    from toolkg.cli.render import print_result

    store = pyoxigraph.Store()
    subject, predicate = pyoxigraph.NamedNode("https://example.org/s"), pyoxigraph.NamedNode("https://example.org/p")
    store.add(pyoxigraph.Quad(subject, predicate, pyoxigraph.Literal(text)))
    out = io.StringIO()
    print_result(store.query(sparql), fmt, out)
    return out.getvalue()


@given(text=TEXTS)
def test_query_output_in_every_format_is_free_of_raw_controls_and_reads_back(text):
    import pyoxigraph

    select, construct = "SELECT ?o WHERE { ?s ?p ?o }", "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }"
    outputs = {
        (form, fmt): _query(text, sparql, fmt)
        for form, sparql in (("select", select), ("construct", construct), ("ask", "ASK { ?s ?p ?o }"))
        for fmt in ("table", "json", "csv")
    }
    for (form, fmt), out in outputs.items():  # CSV ends its lines with CR LF, and quotes a value's CR
        assert not UNSAFE.search(out.replace("\r", "") if fmt == "csv" else out), (form, fmt, out)
    selected = json.loads(outputs["select", "json"])["results"]["bindings"]
    assert [b["o"]["value"] for b in selected] == [text]
    (node,) = json.loads(outputs["construct", "json"])  # JSON-LD
    assert node["https://example.org/p"] == [{"@value": text}]
    (triple,) = pyoxigraph.parse(outputs["construct", "table"], format=pyoxigraph.RdfFormat.N_TRIPLES)
    assert triple.object.value == text
    assert json.loads(outputs["ask", "json"]) == {"head": {}, "boolean": True}
    # CSV has no escapes: each raw character shows as one_line's escape (CR, newline and tab are quoted)
    shown = "".join(c if c in "\r\n\t" or not UNSAFE.match(c) else one_line(c) for c in text)
    for form, column in (("select", 0), ("construct", 2)):
        rows = list(csv.reader(io.StringIO(outputs[form, "csv"], newline="")))
        assert len(rows) == 2 and (rows[1] or [""])[column] == shown, (form, rows)  # [] is a lone empty value


@given(text=st.text(max_size=40) | TEXTS)
def test_printed_json_is_free_of_raw_controls_and_reads_back(text):
    from toolkg.cli.common import print_json

    out = io.StringIO()
    print_json({"tool": text, "why": [text]}, out)
    assert not UNSAFE.search(out.getvalue()) and out.getvalue().encode("utf-8")  # lone surrogates escaped too
    assert json.loads(out.getvalue()) == {"tool": text, "why": [text]}


@given(text=TEXTS, cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8))
def test_rdf_written_through_the_escaper_in_any_pieces_is_free_of_raw_controls(text, cuts):
    """What `toolkg export` writes: a character split between two writes is escaped whole."""
    import pyoxigraph

    from toolkg.display import QuotedEscaper

    store = pyoxigraph.Store()
    literal = pyoxigraph.Literal(text)
    subject, predicate = pyoxigraph.NamedNode("https://example.org/s"), pyoxigraph.NamedNode("https://example.org/p")
    store.add(pyoxigraph.Quad(subject, predicate, literal))
    for fmt in (pyoxigraph.RdfFormat.N_QUADS, pyoxigraph.RdfFormat.TRIG, pyoxigraph.RdfFormat.JSON_LD):
        whole = store.dump(format=fmt)
        assert whole is not None  # no output given: dump returns the bytes
        out = io.BytesIO()
        escaper = QuotedEscaper(out)
        bounds = sorted({0, len(whole), *(c for c in cuts if c < len(whole))})
        for start, end in zip(bounds, bounds[1:], strict=False):
            escaper.write(whole[start:end])
        escaper.flush()
        written = out.getvalue().decode("utf-8")
        assert not UNSAFE.search(written), (fmt, written)
        (quad,) = pyoxigraph.parse(written.encode("utf-8"), format=fmt)
        assert quad.object == literal
