"""The report's graph drawing without a browser: which tools a large graph keeps, dot labels as text."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

import pytest

from toolkg.serve import graph_dot
from toolkg.serve.graph_dot import pick


def test_pick_keeps_the_busiest_connected_tools_within_the_cap():
    edges = [(f"c{i}", f"h{i % 5}", "declared") for i in range(200)] + [("x", "x", "declared"), ("y", "z", "inferred")]
    drawn, rest = pick(edges, 40)
    nodes = {n for e in drawn for n in e[:2]}
    assert len(nodes) == 40 and {f"h{h}" for h in range(5)} <= nodes  # the hubs first
    assert sorted(drawn + rest) == sorted(edges) and ("x", "x", "declared") in rest
    assert pick(edges, 40) == (drawn, rest)  # the same store, the same picture
    small = [("a", "b", "declared"), ("b", "b", "inferred")]
    assert pick(small) == ([("a", "b", "declared")], [("b", "b", "inferred")])


@pytest.mark.skipif(not shutil.which("dot"), reason="needs Graphviz (apt-get install graphviz)")
def test_dot_labels_are_text_never_markup():
    names = ["s::<b>bold</b>", "s::back\\N\\l", 's::"quoted" & <script>x</script>', "other::東京\u202eevil"]
    edges = [(names[0], n, "declared") for n in names[1:]]
    svg = graph_dot.dot_svg(edges, {n for n in names if n.startswith("s::")}, lambda n: n.replace("::", " · "))
    tree = ET.fromstring(svg)  # well-formed XML
    ns = "{http://www.w3.org/2000/svg}"
    texts = {t.text for t in tree.iter(f"{ns}text")}
    assert texts == {
        "s · <b>bold</b>",
        "s · back\\N\\l",
        's · "quoted" & <script>x</script>',
        "other · 東京\\u202eevil",
    }
    assert not list(tree.iter(f"{ns}script")) and not list(tree.iter(f"{ns}b"))
    titles = {t.text for t in tree.iter(f"{ns}title")}
    assert names[0] in titles and f"{names[0]} depends on {names[1]} (declared)" in titles
