"""A server's dependency graph laid out by Graphviz ``dot``, as SVG to inline in the report.

``dot`` places the boxes in ranks (producers left of their consumers) and routes the arrows round
them, which the simple layered drawing of ``graph_svg.py`` cannot do for more than a few dozen
tools. Only the ``CAP`` tools with the most edges are drawn (``pick``); the report lists the other
edges in a table. When ``dot`` is not installed or fails, ``dependency_picture`` falls back to
``graph_svg.dependency_svg`` and says so, so a report is always written.

Names come from manifests: they reach ``dot`` as labels, never as node ids (``n0``, ``n1``...), with
markup and backslash escapes neutralised (``graphviz.escape``); ``dot`` escapes them again in its SVG.
What ``dot`` writes around the drawing (XML prologue, comments, point sizes, its own ids) is taken out
so the SVG scales to its section and several can share one page.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from html import escape

from toolkg.display import one_line
from toolkg.ontology.vocabulary import Basis
from toolkg.serve.graph_svg import dependency_svg

# At most this many tools per picture. Laid out left to right, dot stacks a rank's tools in a column,
# ~38 px a box on the page; 50 keeps even a one-rank graph within ~2,000 px (ToolLinkOS's 523-tool server
# was 12,930 px tall), while a typical 3-4 rank graph keeps its 11 pt labels unshrunk in the report's
# ~1,150 px width. Beyond ~50 the hubs' arrows merge into a band nobody can follow (tried: 40, 50, 60 on
# ToolLinkOS gave 125, 179, 206 arrows), and the table under the picture reads better.
CAP = 50
FONT = "WenQuanYi Micro Hei"  # what dot measures labels with; the page's CSS font stack draws them
LABEL_CHARS = 40  # longer labels are cut ('…'); the full name is the box's tooltip and in the tables

# Each producer's arrows share a colour, so a reader can follow a hub's arrows through a dense band.
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22", "#ff7f0e")
Edge = tuple[str, str, str]  # (consumer, producer, basis)


def pick(edges: list[Edge], cap: int = CAP) -> tuple[list[Edge], list[Edge]]:
    """(edges drawn, edges left for the table): the edges among at most ``cap`` tools, taken in order of
    their number of edges (ties by name, so the same store always gives the same picture). A tool joins
    only with an edge to one already taken, and only if the picture stays within ``cap``: no box is
    drawn without an arrow, and a tool depending on itself is left to the table."""
    loops = [e for e in edges if e[0] == e[1]]
    edges = [e for e in edges if e[0] != e[1]]
    degree = Counter(n for e in edges for n in e[:2])
    if len(degree) <= cap:
        return edges, loops
    neighbours: dict[str, set[str]] = {}
    for consumer, producer, _ in edges:
        neighbours.setdefault(consumer, set()).add(producer)
        neighbours.setdefault(producer, set()).add(consumer)
    taken: set[str] = set()
    drawn: set[str] = set()  # the taken tools with an edge to another taken one
    for node in sorted(degree, key=lambda n: (-degree[n], n)):
        linked = neighbours.get(node, set()) & taken
        joining = {node, *linked} - drawn if linked else set()
        if len(drawn) + len(joining) > cap:
            continue
        taken.add(node)
        drawn |= joining
        if len(drawn) == cap:
            break
    inside = [e for e in edges if e[0] in drawn and e[1] in drawn]
    return inside, [e for e in edges if not (e[0] in drawn and e[1] in drawn)] + loops


def _short(text: str) -> str:
    text = one_line(text)  # control and bidi characters shown as escapes, as everywhere in the report
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def dot_svg(edges: list[Edge], own: set[str], label: Callable[[str], str], rankdir: str = "LR") -> str:
    """The SVG ``dot`` draws (raises ``graphviz.ExecutableNotFound`` or ``CalledProcessError`` when it can't)."""
    import graphviz  # the binding is only a quoting helper and a pipe to the `dot` executable

    nodes = sorted({n for e in edges for n in e[:2]})
    key = {n: f"n{i}" for i, n in enumerate(nodes)}
    graph = graphviz.Digraph(
        graph_attr={"rankdir": rankdir, "nodesep": "0.12", "ranksep": "0.7", "bgcolor": "transparent", "pad": "0.1"},
        node_attr={"shape": "box", "style": "filled", "fontname": FONT, "fontsize": "11", "height": "0.28"},
        edge_attr={"arrowsize": "0.6", "color": "#4a5568"},
    )
    # The busiest producers get the distinct colours; the colour repeats only among the minor ones.
    fan_out = Counter(p for c, p, _ in edges if c != p)
    colour = {p: PALETTE[i % len(PALETTE)] for i, p in enumerate(sorted(fan_out, key=lambda p: (-fan_out[p], p)))}
    for node in nodes:
        fill, line = ("#e8f0fb", "#1f3a5f") if node in own else ("#fff4e0", "#b7791f")
        graph.node(key[node], graphviz.escape(_short(label(node))), fillcolor=fill, color=colour.get(node, line))
    for consumer, producer, basis in edges:
        if consumer != producer:  # producer -> consumer: arrows run the way data flows
            style = "solid" if basis == Basis.DECLARED else "dashed"
            graph.edge(key[producer], key[consumer], style=style, color=colour[producer])
    svg = graph.pipe(format="svg", encoding="utf-8")
    titles = {key[n]: one_line(n) for n in nodes}
    titles.update(
        {f"{key[p]}->{key[c]}": f"{one_line(c)} depends on {one_line(p)} ({one_line(b)})" for c, p, b in edges}
    )
    return _tidy(svg, titles)


def _tidy(svg: str, titles: dict[str, str]) -> str:
    """dot's SVG made fit for inlining: no prologue or comments, no ids, scaled to its container (never
    beyond its natural size), and each tooltip the full name instead of dot's node id."""
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<!--.*?-->\s*", "", svg, flags=re.S)
    # Size: ids, empty titles and each label's font attributes go (the page's CSS sets the font), and
    # coordinates keep one decimal (a tenth of a point is below a pixel): about a third of the bytes.
    svg = re.sub(r' id="[^"]*"| font-family="[^"]*" font-size="[^"]*"|<title></title>\n', "", svg)
    svg = re.sub(r' (d|points|x|y|viewBox|transform)="([^"]*)"', _one_decimal, svg)
    match = re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg)
    width = float(match.group(1)) * 4 / 3 if match else 800  # dot measures in points, 4/3 of a CSS pixel each
    svg = re.sub(
        r'<svg width="[\d.]+pt" height="[\d.]+pt"',
        f'<svg class="graph" width="100%" style="max-width:{width:.0f}px" role="img"',
        svg,
        count=1,
    )

    def title(match: re.Match) -> str:
        raw = match.group(1).replace("&#45;", "-").replace("&gt;", ">")
        return f"<title>{escape(titles.get(raw, ''))}</title>"

    return re.sub(r"<title>([^<]*)</title>", title, svg)


def _one_decimal(match: re.Match) -> str:
    value = re.sub(r"(\d\.\d)\d+", r"\1", match.group(2))
    return f' {match.group(1)}="{value}"'


def dependency_picture(edges: list[Edge], own: set[str], label: Callable[[str], str]) -> tuple[str, str]:
    """(svg, note): dot's drawing, or the simple layered one with a one-line note saying why."""
    import graphviz

    try:
        svg = dot_svg(edges, own, label)
    except graphviz.ExecutableNotFound:
        note = "Graphviz is not installed (apt-get install graphviz): drawn with the simple layout."
    except graphviz.CalledProcessError as error:
        reason = error.stderr.decode("utf-8", "replace") if isinstance(error.stderr, bytes) else error.stderr
        note = f"Graphviz failed ({one_line(reason or error.returncode, 160)}): drawn with the simple layout."
    else:
        # A deep chain laid out left to right can be wider than the page; top to bottom it may fit better.
        if _width(svg) > 1400:
            try:
                svg = min((svg, dot_svg(edges, own, label, "TB")), key=_width)
            except graphviz.CalledProcessError:
                pass  # the left-to-right drawing stands
        return svg, ""
    return dependency_svg(edges, own, label), note


def _width(svg: str) -> float:
    match = re.search(r"max-width:(\d+)px", svg)
    return float(match.group(1)) if match else 0.0
