"""`toolkg approve`: accept a flagged tool's current text, list the approvals, revoke one.

An approval pins the tool's text fingerprint as the last build's audit stored it (``toolkg.approvals``): the
tool is shown again by a ``toolkg mcp`` whose ``[toolsearch] hide`` policy hid it (at its next request: the
running server reads the approvals file again), until its text changes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from toolkg.cli.common import add_output, add_store, add_verbosity, print_json, usage
from toolkg.summary import EXIT_OK


def add_parsers(sub) -> None:
    approve = sub.add_parser(
        "approve",
        help="accept a flagged tool's current text (toolkg mcp's hide policy shows it again)",
        description="Approve a tool whose findings (injection, hidden characters, shadowing, a changed text, a toxic "
        "flow) hide it from toolkg mcp under [toolsearch] hide: the approval pins the tool's current text "
        "fingerprint, in <store>/approvals.json beside the database, so it survives rebuilds until the text changes "
        "again. Read the findings it prints (and the tool's text) before approving.",
    )
    approve.add_argument(
        "tools", nargs="*", metavar="TOOL", help="a tool id (server::tool) or a name only one server has"
    )
    approve.add_argument("--list", action="store_true", help="list the approvals and whether each still matches")
    approve.add_argument("--revoke", action="store_true", help="forget the approvals of the TOOLs instead")
    add_store(approve)
    add_output(approve)
    add_verbosity(approve)
    approve.set_defaults(handler=cmd_approve)


def cmd_approve(args: argparse.Namespace) -> int:
    from toolkg.approvals import Approvals

    usage(bool(args.tools) != args.list, "give the TOOLs to approve, or --list")
    usage(not (args.list and args.revoke), "--revoke takes TOOLs, not --list")
    book = Approvals(args.store)
    if args.list:
        return _list(args, book)
    reader = _reader(args.store)
    try:
        ids = [_resolve(reader, tool) for tool in args.tools]
        if args.revoke:
            done = [{"tool": tool_id, "revoked": book.revoke(tool_id)} for tool_id in ids]
            _say(
                args,
                done,
                [f"{d['tool']}: " + ("approval revoked" if d["revoked"] else "was not approved") for d in done],
            )
            return EXIT_OK
        from toolkg.store.findings import read_findings, read_fingerprints

        fingerprints = read_fingerprints(reader, ids)
        findings = read_findings(reader, ids)
    finally:
        reader.close()
    done, lines = [], []
    for tool_id in ids:
        fingerprint = fingerprints.get(tool_id)
        usage(fingerprint is not None, f"{tool_id} has no audited text yet: build the store again (toolkg build)")
        assert fingerprint is not None, "usage() refused it above"
        found = findings.get(tool_id, [])
        entry = book.approve(tool_id, fingerprint, sorted({f.kind.value for f in found}))
        done.append(
            {"tool": tool_id, "fingerprint": fingerprint, "findings": [f.short() for f in found], "at": entry.at}
        )
        lines.append(f"approved {tool_id} (text {fingerprint[:16]}); a change to its text flags it again")
        lines += [f"  {f.kind} {f.severity} in {f.where}: {f.evidence}" for f in found] or ["  (it has no findings)"]
    _say(args, done, lines)
    return EXIT_OK


def _list(args: argparse.Namespace, book) -> int:
    from toolkg.cli.render import table
    from toolkg.store.findings import read_fingerprints

    approvals = book.load()
    reader = _reader(args.store)
    try:
        current = read_fingerprints(reader, approvals)
    finally:
        reader.close()
    rows = []
    for tool_id, approval in sorted(approvals.items()):
        now = current.get(tool_id)
        state = "gone" if now is None else "current" if now == approval.fingerprint else "text changed since"
        rows.append(
            {
                "tool": tool_id,
                "fingerprint": approval.fingerprint,
                "at": approval.at,
                "findings": list(approval.findings),
                "state": state,
            }
        )
    if args.output_format == "json":
        print_json(rows)
    elif not rows:
        print(f"no approvals in {book.path}")
    else:
        cells = [
            [r["tool"], (r["fingerprint"] or "")[:16], r["at"], ", ".join(r["findings"]), r["state"]] for r in rows
        ]
        print(table(["tool", "fingerprint", "approved at", "findings then", "now"], cells))
    return EXIT_OK


def _reader(store_dir: str):
    """The store as agents see it: its published snapshot, else the store itself (a SPARQL server's)."""
    from toolkg.cli.common import open_store
    from toolkg.store.oxigraph_store import ToolStore
    from toolkg.store.snapshots import current_snapshot

    snapshot = current_snapshot(Path(store_dir))
    return ToolStore.open_snapshot(snapshot) if snapshot is not None else open_store(store_dir)


def _resolve(store, tool: str) -> str:
    from toolkg.display import one_line
    from toolkg.store.tool_details import resolve_tool

    ids = resolve_tool(store, tool.strip())
    usage(bool(ids), f"no tool {one_line(tool)!r} in the store")
    usage(len(ids) == 1, f"{len(ids)} tools are named {one_line(tool)!r}: give one of {', '.join(ids[:10])}")
    return ids[0]


def _say(args: argparse.Namespace, data: list[dict], lines: list[str]) -> None:
    from toolkg.display import one_line

    if args.output_format == "json":
        print_json(data)
    else:
        for line in lines:
            print(one_line(line))
