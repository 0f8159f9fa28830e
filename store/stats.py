"""Counts over the store: the run summary's totals and `toolkg stats`."""

from __future__ import annotations

from toolkg.ontology import TK_NS
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
    return {"totals": totals(store), "by_class": by_class, "by_predicate": by_predicate, "servers": per_server}
