"""`toolkg report`: one self-contained HTML page per build run.

What a run did (its summary.json), the quarantine (quarantine.jsonl), a SHACL validation of the
store as it is now, and a section per server (report_servers.py): its dependency graph laid out by
Graphviz dot (inline SVG), the dependencies not drawn and its tools. A table of contents leads to each
part; server sections stay closed until opened, so the page is as long as its contents list. The tools
the audit flagged have a section of their own (``report_servers.findings_html``).

Everything is inline: the page opens from disk, mails as one file, and loads nothing from anywhere
(its only links are to its own sections). It has no <script> element: three event-handler attributes
open the section a link or the address's #fragment names (``OPEN_TARGET``).

The graph is read from the published snapshot (store/snapshots.py), so a report can be made while
another build runs.
"""

from __future__ import annotations

import json
from collections import defaultdict
from html import escape
from pathlib import Path

from toolkg.atomic import write_atomically
from toolkg.display import one_line
from toolkg.errors import NotFoundError, StoreError
from toolkg.ontology.graphs import SERVER_GRAPH_PREFIX
from toolkg.serve.report_servers import findings_html, servers_html, table
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.remote import CONFIG_FILE
from toolkg.store.snapshots import current_snapshot
from toolkg.store.validation import Validator
from toolkg.summary import BuildSummary

# CJK names and descriptions need a CJK font; Latin text keeps the system's. The families named cover
# macOS, Windows and Linux (Debian: fonts-wqy-microhei, which `make browser` installs, or fonts-noto-cjk).
FONTS = (
    'system-ui, "Segoe UI", Roboto, "Noto Sans", "Noto Sans CJK SC", "WenQuanYi Micro Hei", "WenQuanYi Zen Hei", '
    '"PingFang SC", "Hiragino Sans", "Microsoft YaHei", "Malgun Gothic", sans-serif'
)
STYLE = f"""
:root {{ --fonts: {FONTS}; }}
body {{ font-family: var(--fonts); margin: 24px auto; max-width: 1200px; padding: 0 16px; color: #222; }}
h1 {{ color: #1f3a5f; }} h2 {{ border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 32px; }}
table {{ border-collapse: collapse; margin: 8px 0; max-width: 100%; }}
td, th {{ border: 1px solid #ddd; padding: 4px 8px; text-align: left; unicode-bidi: isolate; }}
td {{ overflow-wrap: break-word; }} /* between words only (and after a name's "_" or "-"): never inside one */
th {{ white-space: nowrap; background: #f3f5f8; }} .num {{ text-align: right; }}
.ok {{ color: #176a2b; }} .bad {{ color: #a31515; }} .meta, .legend, .note {{ color: #555; font-size: 13px; }}
.cards {{ display: flex; flex-wrap: wrap; gap: 12px; }}
.card {{ border: 1px solid #ccd; border-radius: 6px; padding: 8px 14px; }}
.card b {{ display: block; font-size: 22px; }}
nav ol {{ padding-left: 20px; }} nav li {{ margin: 2px 0; }}
ul.servers {{ columns: 22em; column-gap: 28px; list-style: none; padding: 0; margin: 6px 0; }}
ul.servers li {{ break-inside: avoid; overflow-wrap: anywhere; }}
[id] {{ scroll-margin-top: 8px; }}
details.server {{ border: 1px solid #d5dbe5; border-radius: 6px; margin: 6px 0; }}
details.server > summary {{ cursor: pointer; padding: 6px 10px; background: #f6f8fb; overflow-wrap: anywhere; }}
details.server > summary .name {{ font-weight: 600; font-size: 17px; }}
details.server[open] > summary {{ border-bottom: 1px solid #d5dbe5; }}
details.server > .body {{ padding: 4px 14px 8px; }}
details.part > summary {{ cursor: pointer; font-weight: 600; margin: 8px 0; }}
.tools td:first-child, .edges td:nth-child(-n+2) {{ min-width: 13em; }}
.rankings {{ display: flex; flex-wrap: wrap; gap: 8px 28px; }} .rankings h4 {{ margin: 8px 0 0; }}
figure {{ margin: 8px 0 12px; }} figcaption {{ color: #555; font-size: 13px; margin-top: 4px; }}
svg.graph {{ display: block; height: auto; }}
svg.graph text {{ font-family: "WenQuanYi Micro Hei", var(--fonts); font-size: 11px; }}
.top {{ text-align: right; font-size: 13px; margin: 4px 0 0; }}
"""
# Opens the <details> around (and at) the element the address's #fragment names, then shows it. On load and
# on hashchange it runs as is; a click on a link opens the target before the browser scrolls to it (so a link
# to the fragment already in the address, which fires no hashchange, still opens a closed section).
OPEN_TARGET = (
    "for (var d = document.getElementById(decodeURIComponent(HASH.slice(1))); d; d = d.parentElement)"
    " if (d.tagName == 'DETAILS') d.open = true;"
)
ON_HASH = OPEN_TARGET.replace("HASH", "location.hash") + (
    " var t = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));"
    " if (t) t.scrollIntoView();"
)
ON_CLICK = "var a = event.target.closest('a'); if (a && a.hash) {" + OPEN_TARGET.replace("HASH", "a.hash") + "}"
TOGGLE_ALL = "document.querySelectorAll('details.server').forEach(function (d) { d.open = OPEN; })"


TOOLS_LISTED = 500  # tool changes the page lists (summary.json has them all)


def latest_run(store_dir: Path) -> str:
    runs = sorted(p.name for p in (store_dir / "runs").glob("*/summary.json") for p in [p.parent])
    if not runs:
        raise StoreError(f"no build runs in {store_dir} (run 'toolkg build' first)")
    return runs[-1]


def _shacl(store: ToolStore) -> tuple[int, list[tuple[str, int, str]]]:
    """(server graphs checked, rows of violations grouped by shape message)."""
    graphs = [g for g in store.named_graphs() if g.value.startswith(SERVER_GRAPH_PREFIX)]
    triples = [t for g in graphs for t in store.graph_triples(g)]
    with Validator() as validator:
        violations = validator.violations(triples)
    grouped: dict[str, list[str]] = defaultdict(list)
    for v in violations:
        grouped[f"{v.message} ({v.path.rsplit('#', 1)[-1] or 'node'})"].append(v.focus.rsplit("/", 1)[-1])
    return len(graphs), [(m, len(f), ", ".join(sorted(f)[:5])) for m, f in sorted(grouped.items())]


def render_report(store_dir: str | Path, run_id: str | None = None) -> str:
    store_dir = Path(store_dir)
    run_id = run_id or latest_run(store_dir)
    folder = store_dir / "runs" / run_id
    if not (folder / "summary.json").exists():
        raise NotFoundError(f"no run {run_id!r} in {store_dir}/runs")
    summary = BuildSummary.load(folder / "summary.json")  # a corrupt one is one line naming it
    lines = (folder / "quarantine.jsonl").read_text(encoding="utf-8").split("\n")
    quarantine = [json.loads(line) for line in lines if line]
    if (store_dir / CONFIG_FILE).exists():
        raise StoreError(f"{store_dir} keeps its graph on a SPARQL server; reports read on-disk snapshots")
    snapshot = current_snapshot(store_dir)
    if snapshot is None:
        raise StoreError(f"{store_dir} has no published snapshot yet (run 'toolkg build' once more)")
    store = ToolStore.open_snapshot(snapshot)
    try:
        checked, violations = _shacl(store)
        contents, sections, servers = servers_html(store)
        flagged, flagged_html = findings_html(store)
    finally:
        store.close()

    totals = summary.totals
    cards = "".join(
        f'<div class="card"><b>{totals.get(k, 0)}</b>{k}</div>'
        for k in ("servers", "tools", "parameters", "outputs", "dependencies", "quads")
    )

    # Names come from manifests: escaped for HTML (_table), their control characters shown (one_line), and
    # long ones cut, so a name can neither inject markup nor reorder or break the page's text.
    def files(paths: list[str]) -> str:
        return ", ".join(one_line(Path(p).name, 120) for p in paths[:20])

    changes = [
        ["new", len(summary.new), files(summary.new)],
        ["changed", len(summary.changed), files(summary.changed)],
        ["removed", len(summary.removed), files(summary.removed)],
        ["reprocessed", len(summary.reprocessed), files(summary.reprocessed)],
        ["rebuilt, bytes unchanged", len(summary.rebuilt), files(summary.rebuilt)],
        ["unchanged (skipped)", len(summary.skipped), ""],
    ]
    tool_rows = [[c.change, one_line(c.tool, 200), one_line(", ".join(c.fields), 400)] for c in summary.tools]
    tools_html = (
        table(["change", "tool", "what changed"], tool_rows[:TOOLS_LISTED])
        + (f"<p>{len(tool_rows) - TOOLS_LISTED} more in summary.json.</p>" if len(tool_rows) > TOOLS_LISTED else "")
        if tool_rows
        else "<p>No tool was added, changed or removed.</p>"
    )
    if summary.only:  # a sync (build --only): what it did to each server it was asked for
        kept = f" Kept, as no manifest under its paths defines them (--prune removes them): {', '.join(summary.kept)}."
        tools_html = (
            f"<p>A sync of {escape(', '.join(one_line(s, 80) for s in summary.only))} (toolkg build --only)."
            f"{escape(kept) if summary.kept else ''}</p>" + tools_html
        )
    loaded = (
        f"This run loaded {summary.loaded_servers} servers, {summary.loaded_tools} tools and "
        f"{summary.loaded_triples} triples; inferred dependencies: {summary.inferred.get('total', 0)}; "
        f"structural links: {summary.links.get('total', 0)}."
    )
    quarantine_html = (
        table(
            ["stage", "source", "item", "reason"],
            [
                [one_line(q["stage"]), one_line(Path(q["source"]).name, 120), one_line(q["item"], 200)]
                + [one_line(q["reason"])]
                for q in quarantine
            ],
        )
        if quarantine
        else '<p class="ok">Nothing was quarantined.</p>'
    )
    shacl_html = (
        f'<p class="ok">The {checked} server graphs conform to the shapes (ontology/shapes.ttl).</p>'
        if not violations
        else f'<p class="bad">{sum(r[1] for r in violations)} violations in {checked} server graphs:</p>'
        + table(["shape message", "focus nodes", "examples"], violations, {1})
    )
    withheld = [q for q in quarantine if q["stage"] == "validate"]
    if withheld:
        shacl_html += f"<p>This run withheld {len(withheld)} item(s) that failed validation (listed above).</p>"
    timings = table(["stage", "seconds"], [[k, f"{v:.2f}"] for k, v in summary.stage_seconds.items()], {1})
    toggle = "".join(
        f'<button type="button" onclick="{escape(TOGGLE_ALL.replace("OPEN", value))}">{text}</button> '
        for value, text in (("true", "open all"), ("false", "close all"))
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>toolkg run {escape(run_id)}</title><style>{STYLE}</style></head>
<body onload="{escape(ON_HASH)}" onhashchange="{escape(ON_HASH)}" onclick="{escape(ON_CLICK)}">
<h1>toolkg build {escape(run_id)}</h1>
<p>Store <code>{escape(summary.store)}</code>; started {escape(summary.started)}, ended {escape(summary.ended)};
snapshot <code>{escape(snapshot.name)}</code>.</p>
<nav id="contents"><h2>Contents</h2><ol>
<li><a href="#counts">Counts</a></li><li><a href="#changes">What changed</a></li>
<li><a href="#quarantine">Quarantine ({len(quarantine)})</a></li><li><a href="#shacl">SHACL validation</a></li>
<li><a href="#findings">Flagged tools ({flagged})</a></li>
<li><a href="#servers">Servers ({servers})</a>: each with its tools and dependencies (the dependencies its tools
consume)<ul class="servers">{contents}</ul></li>
<li><a href="#timings">Timings</a></li></ol></nav>
<h2 id="counts">Counts</h2><div class="cards">{cards}</div>
<h2 id="changes">What changed</h2>{table(["manifests", "count", "files"], changes, {1})}<p>{escape(loaded)}</p>
<h3 id="tools">Tools added, changed and removed ({len(tool_rows)})</h3>{tools_html}
<h2 id="quarantine">Quarantine ({len(quarantine)})</h2>{quarantine_html}
<h2 id="shacl">SHACL validation</h2>{shacl_html}
<h2 id="findings">Flagged tools ({flagged})</h2>{flagged_html}
<h2 id="servers">Servers ({servers})</h2>
<p class="legend">Each section opens on a click ({toggle}). A graph's arrows run from a tool to the tools that
depend on it, producers left of their consumers: solid when declared by the manifest, dashed when inferred; each
producer's arrows share its border's colour. Blue boxes are the server's tools, amber ones tools of other servers
(named "server · tool"). Hover a box or an arrow for its full name.</p>
{sections or "<p>No servers.</p>"}
<h2 id="timings">Timings</h2>{timings}
</body></html>
"""


def write_report(store_dir: str | Path, run_id: str | None = None, output: str | Path | None = None) -> Path:
    store_dir = Path(store_dir)
    run_id = run_id or latest_run(store_dir)
    html = render_report(store_dir, run_id)
    path = Path(output) if output else store_dir / "runs" / run_id / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, html)  # whole or not at all; a full disk is one line naming the file
    return path
