"""Which catalog-wide stages are owed a rerun: crash consistency for canonicalize, infer, link, snapshot.

Per-manifest loads are each one transaction, but the stages computed over the whole catalog
run after them. A build killed in between would leave those graphs describing the old catalog,
and the next build, finding every manifest unchanged, would never redo them. So before the
first per-manifest write of a run, every catalog-wide stage is marked *pending* (one small
transaction in the build-state graph); each stage clears its own mark as the last thing it
does, after its graph is swapped in. A build that finds a mark recomputes that stage, even
when every manifest is unchanged.

>>> import tempfile
>>> from toolkg.stages import StageName
>>> from toolkg.store.oxigraph_store import ToolStore
>>> with tempfile.TemporaryDirectory() as tmp, ToolStore(tmp) as store:
...     mark_pending(store, (StageName.INFER, StageName.LINK), "run-1")
...     clear_pending(store, StageName.INFER)
...     sorted(pending_stages(store))
['link']
"""

from __future__ import annotations

from collections.abc import Iterable

from pyoxigraph import Literal, NamedNode

from toolkg.ontology import RDF, TK, iris
from toolkg.ontology.graphs import STATE_GRAPH
from toolkg.store.oxigraph_store import ToolStore

_PREFIX = iris.BASE + "build-state/"


def stage_node(stage: str) -> NamedNode:
    return NamedNode(_PREFIX + stage)


def mark_pending(store: ToolStore, stages: Iterable[str], run_id: str) -> None:
    """Mark ``stages`` as owed a rerun (one transaction), before the catalog changes."""
    lines = []
    for stage in stages:
        node = stage_node(stage)
        lines.append(f"{node} {RDF.type} {TK.CatalogStage} .")
        lines.append(f"{node} {TK.pendingSince} {Literal(run_id)} .")
    if lines:
        store.update(f"INSERT DATA {{ GRAPH {STATE_GRAPH} {{\n" + "\n".join(lines) + "\n} }")


def clear_pending(store: ToolStore, stage: str, options_digest: str = "") -> None:
    """The stage is done: its mark goes, as the last write of that stage, and the digest of the
    options it ran with is kept (other options next time make it owed again)."""
    node = stage_node(stage)
    store.update(
        f"DELETE WHERE {{ GRAPH {STATE_GRAPH} {{ {node} {TK.pendingSince} ?run }} }} ;\n"
        f"DELETE WHERE {{ GRAPH {STATE_GRAPH} {{ {node} {TK.optionsDigest} ?digest }} }} ;\n"
        f"INSERT DATA {{ GRAPH {STATE_GRAPH} {{ {node} {RDF.type} {TK.CatalogStage} ; "
        f"{TK.optionsDigest} {Literal(options_digest)} }} }}"
    )


def options_digests(store: ToolStore) -> dict[str, str]:
    """Stage -> digest of the options it last completed with."""
    rows = store.select(f"SELECT ?stage ?digest WHERE {{ GRAPH {STATE_GRAPH} {{ ?stage tk:optionsDigest ?digest }} }}")
    return {r["stage"].value[len(_PREFIX) :]: r["digest"].value for r in rows if r["stage"].value.startswith(_PREFIX)}


def pending_stages(store: ToolStore) -> set[str]:
    """Stages a previous build left owed (killed, or failed in that stage)."""
    rows = store.select(f"SELECT ?stage WHERE {{ GRAPH {STATE_GRAPH} {{ ?stage tk:pendingSince ?run }} }}")
    return {r["stage"].value[len(_PREFIX) :] for r in rows if r["stage"].value.startswith(_PREFIX)}
