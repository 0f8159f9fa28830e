"""The report's part about servers: one entry per server in the contents, one section per server.

A section is a closed ``<details>`` (the page stays short however many servers there are): the
server's dependency graph drawn by ``graph_dot``, whole for a small server, and for a big one its hubs with
two tables ranked by degree (``report_hubs``), the dependencies left out of the drawing in a table, and the
server's tools with their descriptions. A server's
dependencies are those its tools consume; producers on other servers are named "server · tool".

Names and descriptions come from manifests: every one is shown through ``one_line`` (control and
bidi characters as escapes) and ``html.escape``, and an anchor is a slug, never the raw name.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from html import escape

from toolkg.display import one_line
from toolkg.ontology.vocabulary import Basis
from toolkg.serve.graph_dot import dependency_picture, pick
from toolkg.serve.report_hubs import HUB_TOOLS, is_small, ranking_tables
from toolkg.store.dependencies import DependencyRow, dependency_rows
from toolkg.store.oxigraph_store import ToolStore

MAX_GRAPHS = 200  # servers drawn (most dependencies first); the rest keep their tables
MAX_TOOL_ROWS = 1000  # rows of a server's tool table (ToolLinkOS's biggest has 523); the store has them all
MAX_EDGE_ROWS = 2000  # rows of a server's table of dependencies not drawn
DESCRIPTION_CHARS = 160  # a description's first line or two is what a reader scans for


@dataclass
class Picture:
    svg: str
    note: str  # why the simple layout drew it, when it did
    drawn: set[tuple[str, str]]  # (consumer, producer) pairs in the picture
    tools_drawn: int
    tools: int
    whole: bool = True  # the whole graph; else the hubs of a big server (``report_hubs``)


@dataclass
class Server:
    id: str
    name: str = ""
    tools: list[tuple[str, str, str]] = field(default_factory=list)  # (tool id, name, description)
    edges: list[DependencyRow] = field(default_factory=list)  # dependency rows whose consumer is one of its tools
    used_from_elsewhere: int = 0  # dependencies of other servers' tools on its tools
    used_by: Counter = field(default_factory=Counter)  # tool id -> dependencies on it, from any server


def table(
    headers: list[str], rows: Sequence[Sequence[object]], numeric: AbstractSet[int] = frozenset(), css: str = ""
) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{escape(str(c))}</td>' if i in numeric else f"<td>{breakable(str(c))}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    attribute = f' class="{escape(css)}"' if css else ""
    return f"<table{attribute}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def breakable(text: str) -> str:
    """``text`` escaped, with a line-break opportunity after each ``_``: cells wrap between words (the page's
    CSS never breaks inside one) and a long snake_case identifier may break at its underscores, as a
    kebab-case one does at its hyphens."""
    return escape(text).replace("_", "_<wbr>")


def read_servers(store: ToolStore) -> list[Server]:
    """Every server with its tools and dependencies, sorted by id (how a reader looks one up)."""
    servers: dict[str, Server] = {}

    def server(server_id: str) -> Server:
        return servers.setdefault(server_id, Server(server_id))

    for row in store.select("SELECT ?id ?n WHERE { ?s a tk:Server ; tk:identifier ?id . OPTIONAL { ?s tk:name ?n } }"):
        server(row["id"].value).name = row["n"].value if row.get("n") else ""
    for row in store.select("""SELECT ?id ?name ?description WHERE {
            ?t a tk:Tool ; tk:identifier ?id ; tk:name ?name . OPTIONAL { ?t dcterms:description ?description } }"""):
        tool = row["id"].value
        description = row["description"].value if row.get("description") else ""
        server(tool.partition("::")[0]).tools.append((tool, row["name"].value, description))
    for edge in dependency_rows(store):
        consumer, producer = edge["consumer"].partition("::")[0], edge["producer"].partition("::")[0]
        server(consumer).edges.append(edge)
        server(producer).used_by[edge["producer"]] += 1
        if producer != consumer:
            server(producer).used_from_elsewhere += 1
    for s in servers.values():
        s.tools.sort()
    return sorted(servers.values(), key=lambda s: (s.id.casefold(), s.id))


def anchors(servers: list[Server]) -> dict[str, str]:
    """Server id -> its section's id: ``server-<id>`` when the id is a plain slug, else a cleaned id with a
    short hash (so two ids that clean alike stay apart), unique on the page."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for s in servers:
        slug = re.sub(r"[^A-Za-z0-9_.-]", "-", s.id)[:60]
        if slug != s.id or not slug:
            slug += "-" + hashlib.sha1(s.id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        anchor, n = f"server-{slug}", 1
        while anchor in taken:
            n += 1
            anchor = f"server-{slug}-{n}"
        taken.add(anchor)
        out[s.id] = anchor
    return out


def _pairs(server: Server) -> list[tuple[str, str, str]]:
    """(consumer, producer, basis) once per pair of tools; a pair both declared and inferred is declared."""
    basis: dict[tuple[str, str], str] = {}
    for r in server.edges:
        pair = (r["consumer"], r["producer"])
        if basis.get(pair) != Basis.DECLARED:
            basis[pair] = r["basis"]
    return sorted((c, p, b) for (c, p), b in basis.items())


def _label(server_id: str):
    def label(tool: str) -> str:
        owner, _, name = tool.partition("::")
        return name if owner == server_id else f"{owner} · {name}"

    return label


def draw_all(servers: list[Server]) -> dict[str, Picture]:
    """Server id -> its picture, for the ``MAX_GRAPHS`` servers with the most dependencies; dot runs in
    parallel (a process each, so threads are enough)."""
    chosen = sorted((s for s in servers if s.edges), key=lambda s: (-len(s.edges), s.id))[:MAX_GRAPHS]

    def draw(server: Server) -> Picture:
        pairs = _pairs(server)
        whole = is_small(pairs)
        drawn, _ = pick(pairs) if whole else pick(pairs, HUB_TOOLS)
        own = {t for t, _, _ in server.tools}
        svg, note = dependency_picture(drawn, own, _label(server.id))
        tools = len({n for c, p, _ in pairs if c != p for n in (c, p)})
        drawn_tools = len({n for e in drawn for n in e[:2]})
        return Picture(svg, note, {(c, p) for c, p, _ in drawn}, drawn_tools, tools, whole)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return dict(zip([s.id for s in chosen], pool.map(draw, chosen), strict=True))


def _n(count: int, one: str, many: str) -> str:
    """'1 tool', '2 tools'."""
    return f"{count} {one if count == 1 else many}"


def _counts(server: Server) -> str:
    """'5 tools · 1 dependency'."""
    return f"{_n(len(server.tools), 'tool', 'tools')} · {_n(len(server.edges), 'dependency', 'dependencies')}"


def _rankings(server: Server, label) -> str:
    """A big server's two tables ranked by degree (``report_hubs.ranking_tables``)."""
    most_used, most_needing = ranking_tables(_pairs(server), label)
    return (
        '<div class="rankings"><div><h4>Most depended on</h4>'
        + table(["tool", "tools needing it", "declared", "inferred"], most_used, {1, 2, 3}, "ranking")
        + "</div><div><h4>Most prerequisites</h4>"
        + table(["tool", "prerequisites", "the first of them"], most_needing, {1}, "ranking")
        + "</div></div>"
    )


def contents_entry(server: Server, anchor: str) -> str:
    other = sum(1 for r in server.edges if r["producer"].partition("::")[0] != server.id)
    deps = _counts(server)
    if other:
        deps += f" ({other} on other servers)"
    return (
        f'<li><a href="#{escape(anchor)}">{escape(one_line(server.id, 80))}</a> <span class="meta">{deps}</span></li>'
    )


def server_section(server: Server, anchor: str, picture: Picture | None) -> str:
    label = _label(server.id)
    parts = []
    if server.name and server.name != server.id:
        parts.append(f"<p>{escape(one_line(server.name, 200))}</p>")
    if server.used_from_elsewhere:
        used = server.used_from_elsewhere
        deps = _n(used, "dependency", "dependencies")
        parts.append(f'<p class="meta">Tools of other servers depend on its tools too ({deps}).</p>')
    drawn_pairs: set[tuple[str, str]] = picture.drawn if picture else set()
    rest = [r for r in server.edges if (r["consumer"], r["producer"]) not in drawn_pairs]
    if picture:
        arrows = _n(len(picture.drawn), "arrow", "arrows") + ", one per pair of tools"
        what = (
            f"All {_n(picture.tools, 'tool', 'tools')} and the "
            f"{_n(len(server.edges), 'dependency', 'dependencies')} among them ({arrows})."
            if picture.tools_drawn == picture.tools
            else f"The {picture.tools_drawn} tools with the most dependencies (of {picture.tools}) and the "
            f"{len(server.edges) - len(rest)} dependencies among them ({arrows}); the other {len(rest)} are in "
            "the table below."
        )
        if not picture.whole:
            what = (
                f"A big server: its {picture.tools_drawn} tools with the most dependencies (of {picture.tools}) and "
                f"the {len(server.edges) - len(rest)} dependencies among them ({arrows}). The tables below rank "
                f"every tool by its dependencies; the other {len(rest)} dependencies are in the last one."
            )
        note = f'<p class="note">{escape(picture.note)}</p>' if picture.note else ""
        parts.append(
            f'<figure class="{"whole" if picture.whole else "hubs"}">{note}{picture.svg}'
            f"<figcaption>{escape(what)}</figcaption></figure>"
        )
        if not picture.whole:
            parts.append(_rankings(server, label))
    elif server.edges:
        parts.append(f'<p class="meta">Not drawn: only the {MAX_GRAPHS} servers with the most dependencies are.</p>')
    if rest:
        rows = [
            [label(r["consumer"]), label(r["producer"]), r["kind"], r["parameter"] or "", r["basis"]]
            + [f"{r['confidence']:.2f}" if r["confidence"] is not None else ""]
            for r in rest[:MAX_EDGE_ROWS]
        ]
        rows = [[one_line(c, 120) for c in row] for row in rows]
        more = f"<p>… and {len(rest) - MAX_EDGE_ROWS} more.</p>" if len(rest) > MAX_EDGE_ROWS else ""
        title = "Dependencies not drawn" if picture else "Dependencies"
        parts.append(
            f'<details class="part edges"><summary>{title} ({len(rest)})</summary>'
            + table(["tool", "depends on", "kind", "parameter", "basis", "confidence"], rows, {5})
            + more
            + "</details>"
        )
    depends = Counter(r["consumer"] for r in server.edges)
    tool_rows = [
        [one_line(name, 120), one_line(description, DESCRIPTION_CHARS), depends[tool], server.used_by[tool]]
        for tool, name, description in server.tools[:MAX_TOOL_ROWS]
    ]
    more = f"<p>… and {len(server.tools) - MAX_TOOL_ROWS} more.</p>" if len(server.tools) > MAX_TOOL_ROWS else ""
    opened = "" if server.edges else " open"  # without a graph the tools are all there is to see
    parts.append(
        f'<details class="part tools"{opened}><summary>Tools ({len(server.tools)})</summary>'
        + table(["tool", "description", "depends on", "used by"], tool_rows, {2, 3})
        + more
        + "</details>"
    )
    return (
        f'<details class="server" id="{escape(anchor)}"><summary><span class="name">'
        f'{escape(one_line(server.id, 120))}</span> <span class="meta">{_counts(server)}</span>'
        f'</summary><div class="body">{"".join(parts)}<p class="top"><a href="#contents">↑ contents</a></p>'
        "</div></details>"
    )


def servers_html(store: ToolStore) -> tuple[str, str, int]:
    """(contents entries, sections, servers) for the page."""
    servers = read_servers(store)
    ids = anchors(servers)
    pictures = draw_all(servers)
    contents = "".join(contents_entry(s, ids[s.id]) for s in servers)
    sections = "".join(server_section(s, ids[s.id], pictures.get(s.id)) for s in servers)
    return contents, sections, len(servers)


def findings_html(store: ToolStore) -> tuple[int, str]:
    """(flagged tools, the report's section about them): one row per medium or high finding of each flagged tool
    (the audit's evidence is already made safe; it is escaped here again, as every name is)."""
    from toolkg.store.stats import findings_summary

    summary = findings_summary(store)
    rows = [
        [one_line(entry["tool"], 200), f["kind"], f["severity"], one_line(f["where"], 120), one_line(f["evidence"])]
        + ["yes" if entry["approved"] else ""]
        for entry in summary["flagged"]
        for f in entry["findings"]
    ]
    notes = summary["tools_with_notes_only"]
    note = (
        f'<p class="note">{notes} other tool(s) have only notes: a name another server also has.</p>' if notes else ""
    )
    if not rows:
        return 0, '<p class="ok">The audit flagged no tool.</p>' + note
    legend = (
        '<p class="legend">What the audit found in these tools\' text (injection: instructions addressed to the '
        "model; hidden: invisible or deceptive characters; shadowing: a name or text aimed at another server's "
        "tool; changed: the text differs from the one accepted; toxic-flow: this tool can send out what another reads "
        "from private data while a third reads untrusted content, in one toolset). Evidence is shown with invisible "
        "characters as [U+XXXX] and links defanged. <code>toolkg approve TOOL</code> accepts a tool's current text.</p>"
    )
    headers = ["tool", "kind", "severity", "where", "evidence", "approved"]
    return summary["tools_flagged"], legend + table(headers, rows, css="findings") + note
