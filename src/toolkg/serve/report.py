"""`toolkg report`: one self-contained HTML page per build run.

What a run did (its summary.json), the quarantine (quarantine.jsonl), a SHACL validation of the
store as it is now, and a picture of each server's dependency graph (inline SVG). Everything is
inline: the page opens from disk, mails as one file, and loads nothing from anywhere.

The graph is read from the published snapshot (store/snapshots.py), so a report can be made while
another build runs.
"""

from __future__ import annotations

import json
from collections import defaultdict
from html import escape
from pathlib import Path

from toolkg.display import one_line
from toolkg.errors import NotFoundError, StoreError
from toolkg.ontology.iris import SERVER_GRAPH_PREFIX
from toolkg.serve.graph_svg import dependency_svg
from toolkg.store.dependencies import dependency_rows
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.remote import CONFIG_FILE
from toolkg.store.snapshots import current_snapshot
from toolkg.store.validation import Validator
from toolkg.summary import BuildSummary

MAX_GRAPHS = 200  # servers drawn; a page with more pictures than this helps nobody
STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px auto; max-width: 1200px; color: #222; }
h1 { color: #1f3a5f; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 32px; }
table { border-collapse: collapse; margin: 8px 0; }
td, th { border: 1px solid #ddd; padding: 4px 8px; text-align: left; overflow-wrap: break-word; unicode-bidi: isolate; }
th { white-space: nowrap; }
th { background: #f3f5f8; } .num { text-align: right; } .ok { color: #176a2b; } .bad { color: #a31515; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; }
.card { border: 1px solid #ccd; border-radius: 6px; padding: 8px 14px; }
.card b { display: block; font-size: 22px; } figure { margin: 12px 0 24px; overflow-x: auto; }
figcaption { font-weight: 600; margin-bottom: 4px; overflow-wrap: anywhere; } .legend { color: #555; font-size: 13px; }
"""


def latest_run(store_dir: Path) -> str:
    runs = sorted(p.name for p in (store_dir / "runs").glob("*/summary.json") for p in [p.parent])
    if not runs:
        raise StoreError(f"no build runs in {store_dir} (run 'toolkg build' first)")
    return runs[-1]


def _table(headers: list[str], rows: list[list[object]], numeric: set[int] = frozenset()) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{escape(str(c))}</td>' if i in numeric else f"<td>{escape(str(c))}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _shacl(store: ToolStore) -> tuple[int, list[list[object]]]:
    """(server graphs checked, rows of violations grouped by shape message)."""
    graphs = [g for g in store.named_graphs() if g.value.startswith(SERVER_GRAPH_PREFIX)]
    triples = [t for g in graphs for t in store.graph_triples(g)]
    with Validator() as validator:
        violations = validator.violations(triples)
    grouped: dict[str, list[str]] = defaultdict(list)
    for v in violations:
        grouped[f"{v.message} ({v.path.rsplit('#', 1)[-1] or 'node'})"].append(v.focus.rsplit("/", 1)[-1])
    return len(graphs), [[m, len(f), ", ".join(sorted(f)[:5])] for m, f in sorted(grouped.items())]


def _server_pictures(store: ToolStore) -> list[tuple[str, int, str]]:
    """(server, edges, svg) for each server with dependency edges, most edges first."""
    by_server: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for r in dependency_rows(store):
        by_server[r["consumer"].partition("::")[0]].append((r["consumer"], r["producer"], r["basis"]))
    pictures = []
    for server, edges in sorted(by_server.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:MAX_GRAPHS]:
        edges = sorted(set(edges))
        own = {n for e in edges for n in e[:2] if n.startswith(server + "::")}
        pictures.append((server, len(edges), dependency_svg(edges, own)))
    return pictures


def render_report(store_dir: str | Path, run_id: str | None = None) -> str:
    store_dir = Path(store_dir)
    run_id = run_id or latest_run(store_dir)
    folder = store_dir / "runs" / run_id
    if not (folder / "summary.json").exists():
        raise NotFoundError(f"no run {run_id!r} in {store_dir}/runs")
    summary = BuildSummary.model_validate_json((folder / "summary.json").read_text(encoding="utf-8"))
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
        pictures = _server_pictures(store)
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
        ["unchanged (skipped)", len(summary.skipped), ""],
    ]
    loaded = (
        f"This run loaded {summary.loaded_servers} servers, {summary.loaded_tools} tools and "
        f"{summary.loaded_triples} triples; inferred dependencies: {summary.inferred.get('total', 0)}; "
        f"structural links: {summary.links.get('total', 0)}."
    )
    quarantine_html = (
        _table(
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
        + _table(["shape message", "focus nodes", "examples"], violations, {1})
    )
    withheld = [q for q in quarantine if q["stage"] == "validate"]
    if withheld:
        shacl_html += f"<p>This run withheld {len(withheld)} item(s) that failed validation (listed above).</p>"
    figures = "".join(
        f'<figure id="server-{escape(one_line(server))}"><figcaption>{escape(one_line(server, 120))} — {count} edge(s)'
        "</figcaption>"
        f"{svg}</figure>"
        for server, count, svg in pictures
    )
    timings = _table(["stage", "seconds"], [[k, f"{v:.2f}"] for k, v in summary.stage_seconds.items()], {1})
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>toolkg run {escape(run_id)}</title><style>{STYLE}</style></head>
<body>
<h1>toolkg build {escape(run_id)}</h1>
<p>Store <code>{escape(summary.store)}</code>; started {escape(summary.started)}, ended {escape(summary.ended)};
snapshot <code>{escape(snapshot.name)}</code>.</p>
<h2 id="counts">Counts</h2><div class="cards">{cards}</div>
<h2 id="changes">What changed</h2>{_table(["manifests", "count", "files"], changes, {1})}<p>{escape(loaded)}</p>
<h2 id="quarantine">Quarantine ({len(quarantine)})</h2>{quarantine_html}
<h2 id="shacl">SHACL validation</h2>{shacl_html}
<h2 id="graphs">Dependency graphs by server ({len(pictures)})</h2>
<p class="legend">Producers left of their consumers; solid arrows declared, dashed inferred; grey boxes are tools of
other servers. Hover a box or an arrow for its full name.</p>{figures or "<p>No dependency edges.</p>"}
<h2 id="timings">Timings</h2>{timings}
</body></html>
"""


def write_report(store_dir: str | Path, run_id: str | None = None, output: str | Path | None = None) -> Path:
    store_dir = Path(store_dir)
    run_id = run_id or latest_run(store_dir)
    html = render_report(store_dir, run_id)
    path = Path(output) if output else store_dir / "runs" / run_id / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path
