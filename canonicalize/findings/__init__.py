"""The audit: findings about each tool's text over the whole catalog (the ``audit`` stage, flows/stages/audit.py).

``audit`` runs the four detectors over every tool: ``injection`` (a calibrated score over phrasing
addressed to the model: injection.py), ``hidden`` (invisible and deceptive characters: hidden.py),
``shadowing`` (names and text aimed at another server's tools: shadowing.py) and ``changed`` (the text
or schema differs from the accepted one: changes.py). It returns each tool's findings, its text
fingerprint and, while a change is pending, the fingerprint of its accepted text; the stage stores them
in its graph (store/findings.py), where ``toolkg stats``, ``toolkg report`` and ``toolkg mcp`` read them.

    from toolkg.canonicalize.findings import audit
    from toolkg.findings import ToolText
    result = audit([ToolText.from_tool(t) for t in tools])
    for tool_id, findings in result.findings.items(): ...
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from toolkg.approvals import Approval
from toolkg.canonicalize.findings.changes import changed_finding
from toolkg.canonicalize.findings.hidden import hidden_findings
from toolkg.canonicalize.findings.injection import Model, injection_findings, load_model
from toolkg.canonicalize.findings.shadowing import CatalogNames, shadowing_findings
from toolkg.findings import Finding, Previous, ToolText

__all__ = ["AuditResult", "Previous", "audit", "tool_findings"]


@dataclass
class AuditResult:
    findings: dict[str, list[Finding]] = field(default_factory=dict)  # tool id -> its findings (flagged tools only)
    fingerprints: dict[str, str] = field(default_factory=dict)  # tool id -> its text fingerprint
    accepted: dict[str, str] = field(default_factory=dict)  # tool id -> accepted fingerprint, where it differs


def tool_findings(tool: ToolText, names: CatalogNames, model: Model | None = None) -> list[Finding]:
    """The findings about one tool's own text (every kind but ``changed``), most severe first."""
    model = model or load_model()
    found = injection_findings(tool, model) + hidden_findings(tool) + shadowing_findings(tool, names, model)
    return by_severity(found)


def by_severity(found: Iterable[Finding]) -> list[Finding]:
    """Findings most severe first, then by kind and field: the order every list of a tool's findings has."""
    return sorted(found, key=lambda f: (-f.severity.rank, f.kind, f.where))


def audit(
    tools: Sequence[ToolText],
    previous: Mapping[str, Previous] | None = None,
    old_texts: Mapping[str, ToolText] | None = None,
    approvals: Mapping[str, Approval] | None = None,
    model: Model | None = None,
    catalog: Sequence[ToolText] | None = None,
) -> AuditResult:
    """Every tool's findings. ``previous`` is what the last audit stored (none: every tool is new),
    ``old_texts`` the texts of the previous build for the tools whose text changed since, ``approvals`` the
    approvals file's entries; ``catalog``, when ``tools`` are a few of a larger catalog, its every tool (their
    names at least: what shadowing compares with)."""
    model = model or load_model()
    names = CatalogNames(catalog if catalog is not None else tools)
    previous, old_texts, approvals = previous or {}, old_texts or {}, approvals or {}
    result = AuditResult()
    for tool in tools:
        found = tool_findings(tool, names, model)
        changed, accepted = changed_finding(tool, previous.get(tool.id), old_texts.get(tool.id), approvals)
        if changed is not None:
            found.insert(0, changed)
        fingerprint = tool.fingerprint
        result.fingerprints[tool.id] = fingerprint
        if accepted != fingerprint:
            result.accepted[tool.id] = accepted
        if found:
            result.findings[tool.id] = found
    return result
