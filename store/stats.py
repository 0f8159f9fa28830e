"""Counts over the store: the run summary's totals and `toolkg stats` (with the audit's findings)."""

from __future__ import annotations

from collections import Counter
from typing import Any, TypedDict

from toolkg.approvals import Approvals, approved
from toolkg.ontology import TK_NS
from toolkg.store.findings import read_findings, read_fingerprints
from toolkg.store.oxigraph_store import ToolStore, compact

_CLASS_TOTALS = {
    "servers": "Server",
    "tools": "Tool",
    "parameters": "Parameter",
    "outputs": "Output",
    "dependencies": "Dependency",
}


def totals(store: ToolStore) -> dict[str, int]:
    """Servers, tools, parameters, outputs, qualified dependencies, and quads in the store."""
    counts = {
        row["c"].value: int(row["n"].value)
        for row in store.select("SELECT ?c (COUNT(DISTINCT ?s) AS ?n) WHERE { ?s a ?c } GROUP BY ?c")
    }
    out = {key: counts.get(TK_NS + name, 0) for key, name in _CLASS_TOTALS.items()}
    out["quads"] = store.count_quads()
    return out


def stats(store: ToolStore) -> dict[str, object]:
    """Counts by class, by predicate, and per server (tools, parameters, outputs, dependencies)."""
    by_class = {
        compact(r["c"]): int(r["n"].value)
        for r in store.select("SELECT ?c (COUNT(DISTINCT ?s) AS ?n) WHERE { ?s a ?c } GROUP BY ?c ORDER BY DESC(?n)")
    }
    by_predicate = {
        compact(r["p"]): int(r["n"].value)
        for r in store.select(
            "SELECT ?p (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?p ORDER BY DESC(?n)"
        )
    }
    per_server = []
    for r in store.select("""
        SELECT ?id ?category (COUNT(DISTINCT ?t) AS ?tools) (COUNT(DISTINCT ?p) AS ?params)
               (COUNT(DISTINCT ?o) AS ?outputs) (COUNT(DISTINCT ?d) AS ?deps)
        WHERE { ?s a tk:Server ; tk:identifier ?id . OPTIONAL { ?s tk:category ?category }
                OPTIONAL { ?s tk:hasTool ?t . OPTIONAL { ?t tk:hasParameter ?p } OPTIONAL { ?t tk:hasOutput ?o }
                           OPTIONAL { ?t tk:qualifiedDependency ?d } } }
        GROUP BY ?id ?category ORDER BY ?id"""):
        per_server.append(
            {
                "server": r["id"].value,
                "category": r["category"].value if "category" in r else None,
                "tools": int(r["tools"].value),
                "parameters": int(r["params"].value),
                "outputs": int(r["outputs"].value),
                "dependencies": int(r["deps"].value),
            }
        )
    return {
        "totals": totals(store),
        "by_class": by_class,
        "by_predicate": by_predicate,
        "servers": per_server,
        "findings": findings_summary(store),
    }


class FlaggedTool(TypedDict):
    tool: str
    approved: bool
    findings: list[dict[str, Any]]  # Finding.short() of each medium or high finding


class FindingsSummary(TypedDict):
    by_kind: dict[str, dict[str, int]]  # kind -> severity -> findings
    tools_flagged: int
    tools_with_notes_only: int
    flagged: list[FlaggedTool]


def findings_summary(store: ToolStore) -> FindingsSummary:
    """The audit's findings: counts by kind and severity, and every flagged tool (a medium or high finding) with
    its findings and whether a person approved its current text. Tools with low findings only (a name another
    server has too) are counted as notes."""
    found = read_findings(store)
    by_kind: dict[str, Counter] = {}
    for findings in found.values():
        for f in findings:
            by_kind.setdefault(f.kind.value, Counter())[f.severity.value] += 1
    flagged = {tool: fs for tool, fs in found.items() if any(f.severity != "low" for f in fs)}
    approvals = Approvals(store.directory).load()
    fingerprints = read_fingerprints(store, approvals.keys() & flagged.keys())
    return {
        "by_kind": {kind: dict(counts) for kind, counts in sorted(by_kind.items())},
        "tools_flagged": len(flagged),
        "tools_with_notes_only": len(found) - len(flagged),
        "flagged": [
            {
                "tool": tool,
                "approved": approved(approvals, tool, fingerprints.get(tool)),
                "findings": [f.short() for f in fs if f.severity != "low"],
            }
            for tool, fs in flagged.items()
        ],
    }
