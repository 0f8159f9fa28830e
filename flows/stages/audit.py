"""Audit: findings about each tool's text (injection, hidden, shadowing, changed) and about the toolsets its
roles make (toxic-flow), one audit graph.

The detectors are ``canonicalize/findings/``; this stage feeds them the catalog as the store holds it now,
what the last audit stored (each tool's fingerprint and accepted fingerprint: the baseline of ``changed``), the
previous build's text of the tools whose text changed since (its published snapshot, when there is one: the
words a change added go into the evidence) and the approvals file (``toolkg approve``; an approved text becomes
the accepted one). Its digest includes the approvals, so approving a tool makes the next build redo the audit
even when no manifest changed. Toxic flows span the catalog: each tool's role probabilities (roles.py) are
stored with its fingerprint, and the flows are searched over them and the graph's dependency edges (flows.py)
after the per-tool detectors, on every build and every sync.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from toolkg.approvals import Approvals
from toolkg.canonicalize.findings import audit, by_severity
from toolkg.canonicalize.findings.confusables import skeleton
from toolkg.canonicalize.findings.flows import flow_findings, toxic_flows
from toolkg.canonicalize.findings.roles import Roles, load_role_model
from toolkg.findings import Finding, ToolText
from toolkg.flows.stages.base import CatalogRun, CatalogStage, Change, StageState, StageUpdate
from toolkg.models import Frozen, StageInfo
from toolkg.ontology.graphs import AUDIT_GRAPH
from toolkg.stages import StageName
from toolkg.store.findings import (
    audit_graph_exists,
    audit_triples,
    read_dependency_pairs,
    read_previous,
    read_roles,
    read_tool_names,
    read_tool_texts,
    replace_audit_of,
    role_triples,
)
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.snapshots import current_snapshot


class AuditFigures(Frozen):
    """The audit's figures, as the run summary keeps them (``stages["audit"]["findings"]``)."""

    tools: int = 0
    flagged: int = 0  # tools with a medium or high finding
    by_kind: dict[str, int] = {}  # flagged tools per finding kind
    notes: int = 0  # tools with low findings only


class AuditInfo(StageInfo):
    findings: AuditFigures = AuditFigures()

    def lines(self) -> list[str]:
        a = self.findings
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(a.by_kind.items()))
        flagged = f"{a.flagged} of {a.tools} tools flagged" + (f" ({kinds})" if kinds else "")
        notes = a.notes
        return [f"findings: {flagged}" + (f"; {notes} with notes only (same name on another server)" if notes else "")]


@dataclass
class AuditState(StageState):
    """The store a sync writes, and the stored texts of the tools the current change is about to rewrite:
    what a ``changed`` finding quotes, read by ``update`` before the write, used by ``after_write``."""

    store: ToolStore
    before: dict[str, ToolText] = field(default_factory=dict)


class Audit(CatalogStage[AuditState]):
    """Run the detectors over the stored catalog and swap the audit graph."""

    name = StageName.AUDIT
    result = AuditInfo
    graph = AUDIT_GRAPH
    code = ("toolkg.canonicalize.findings", "toolkg.findings", "toolkg.approvals", "toolkg.store.findings")

    def extra_options(self, run: CatalogRun) -> dict[str, Any]:
        approvals = Approvals(run.store.directory).path
        content = approvals.read_bytes() if approvals.exists() else b""
        # the toxic flows' severity reads the dependency edges: new edges (other inference options, a review)
        # redo the audit though no manifest changed
        edges = "\n".join(f"{c} {p}" for c, p in read_dependency_pairs(run.store)).encode()
        return {"approvals": hashlib.sha256(content).hexdigest()[:16], "edges": hashlib.sha256(edges).hexdigest()[:16]}

    def run(self, run: CatalogRun) -> AuditInfo:
        store = run.store
        texts = read_tool_texts(store)
        previous = read_previous(store)
        moved = [t.id for t in texts if t.id in previous and t.fingerprint != previous[t.id].fingerprint]
        result = audit(texts, previous, _previous_texts(store, moved), Approvals(store.directory).load())
        model = load_role_model()
        roles = model.classify(texts)
        for tool_id, found in _flow_findings(store, roles).items():
            result.findings[tool_id] = by_severity(result.findings.get(tool_id, []) + found)
        triples = audit_triples(result.findings, result.fingerprints, result.accepted)
        store.replace_graph(AUDIT_GRAPH, triples + role_triples(roles, _model_tag(model.digest)))
        alarms = {t: [f for f in fs if f.severity != "low"] for t, fs in result.findings.items()}
        by_kind = Counter(k for fs in alarms.values() for k in {f.kind.value for f in fs})
        return AuditInfo(
            findings=AuditFigures(
                tools=len(texts),
                flagged=sum(1 for fs in alarms.values() if fs),
                by_kind=dict(by_kind),
                notes=sum(1 for fs in alarms.values() if not fs),
            )
        )

    def size(self, run: CatalogRun, info: StageInfo) -> int:
        return info.findings.tools if isinstance(info, AuditInfo) else 0

    # --- incremental sync ----------------------------------------------------------------------
    # The detectors read the tools' texts as the store holds them, so a sync audits after it wrote its change;
    # the texts being replaced are read before (``update``), for the words a ``changed`` finding quotes.

    def warm(self, run: CatalogRun) -> AuditState:
        return AuditState(run.store)

    def update(self, state: AuditState, change: Change) -> StageUpdate:
        """The texts of the tools the change rewrites, as stored (a store never audited: none)."""
        store, changed = state.store, change.changed
        stored = changed and audit_graph_exists(store)
        state.before = {t.id: t for t in read_tool_texts(store, changed)} if stored else {}
        return StageUpdate()

    def after_write(self, state: AuditState, change: Change) -> StageUpdate:
        """Audit the changed tools again, and the tools whose name reads like theirs (name shadowing works
        both ways), and forget the removed ones; one update. Another tool's text that names a changed tool is
        read again by the next build."""
        store, changed, removed = state.store, change.changed, change.removed
        before, state.before = state.before, {}
        if not (changed or removed) or not audit_graph_exists(store):
            return StageUpdate()  # a store never audited: the next build audits it whole
        catalog = read_tool_names(store)
        touched = {skeleton(t.name) for t in before.values()} | {
            skeleton(i.partition("::")[2]) for i in changed | removed
        }
        targets = {t.id for t in catalog if t.id in changed or skeleton(t.name) in touched}
        texts = read_tool_texts(store, targets)
        previous = {i: p for i, p in read_previous(store).items() if i in targets}
        result = audit(texts, previous, before, Approvals(store.directory).load(), catalog=catalog)
        model = load_role_model()
        changed_roles = model.classify(texts)
        # the flows span the catalog: searched again over every tool's roles (the stored ones, the changed tools'
        # new ones) and written with the rest, in the same update
        stored = {i: Roles(*p) for i, p in read_roles(store).items() if i not in targets | removed}
        flows = _flow_findings(store, {**stored, **changed_roles}, catalog)
        replace_audit_of(
            store,
            targets | removed,
            audit_triples(result.findings, result.fingerprints, result.accepted)
            + role_triples(changed_roles, _model_tag(model.digest)),
            flows=audit_triples(flows, {}, {}),
        )
        return StageUpdate()


def _flow_findings(store: ToolStore, roles: dict[str, Roles], catalog=None) -> dict[str, list[Finding]]:
    """The toxic-flow findings of the stored catalog, by sink: its servers' toolsets and the whole store's
    (``catalog``: its ``read_tool_names``, when the caller has read it already)."""
    servers = {t.id: t.server for t in (catalog if catalog is not None else read_tool_names(store))}
    return flow_findings(toxic_flows(servers, roles, read_dependency_pairs(store)))


def _model_tag(digest: str) -> str:
    return f"roles_model.json@{digest}"


def _previous_texts(store: ToolStore, ids: list[str]):
    """The previous build's text of ``ids``, from the snapshot it published (none without one: a store on a
    SPARQL server, or the first build)."""
    if not ids or not store.publishes_snapshots:
        return {}
    snapshot = current_snapshot(store.directory)
    if snapshot is None:
        return {}
    before = ToolStore.open_snapshot(snapshot)
    try:
        return {t.id: t for t in read_tool_texts(before, ids)}
    finally:
        before.close()
