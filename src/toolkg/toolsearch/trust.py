"""What ``toolkg mcp`` does with the audit's findings: warn about them, and hide what the policy says to hide.

Every tool an answer carries has ``warnings``: its findings, short (kind, severity, where, evidence; the evidence
was made safe when it was stored). ``[toolsearch] hide = ["injection", "changed"]`` keeps tools with a finding of
those kinds (at ``hide_severity`` or above, medium by default) out of ``search_tools``, and refuses ``get_tool``,
``tool_dependencies`` and ``call_tool`` on them, until a person approves the tool's current text: ``toolkg
approve TOOL`` (the approvals file, read again whenever it changes) or ``[toolsearch] approved = [...]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkg.approvals import Approval, Approvals, approved, config_approvals
from toolkg.errors import ConfigError, RequestError
from toolkg.findings import FINDING_KINDS, SEVERITIES, Finding, Severity


class HiddenTool(RequestError):
    """The tool is hidden by the trust policy (one line saying why and how to accept it)."""


@dataclass(frozen=True)
class TrustPolicy:
    """Which findings hide a tool. Empty ``hide``: none does (tools still carry their warnings)."""

    hide: frozenset[str] = frozenset()
    severity: Severity = Severity.MEDIUM  # a finding hides at this severity or above
    approved: Mapping[str, Approval] = field(default_factory=dict)  # from the configuration

    @classmethod
    def from_settings(
        cls, hide: Sequence[str] = (), severity: str = "medium", approved: Iterable[str] = ()
    ) -> TrustPolicy:
        unknown = sorted(set(hide) - set(FINDING_KINDS))
        if unknown:
            raise ConfigError(
                f"[toolsearch] hide: unknown finding kind {', '.join(unknown)} (kinds: {', '.join(FINDING_KINDS)})"
            )
        if severity not in SEVERITIES:
            raise ConfigError(f"[toolsearch] hide_severity: {severity!r} is not one of {', '.join(SEVERITIES)}")
        return cls(frozenset(hide), Severity(severity), config_approvals(approved))

    def hiding(self, findings: Sequence[Finding]) -> list[str]:
        """The kinds among ``findings`` that hide the tool (sorted; empty: it is shown)."""
        return sorted({f.kind.value for f in findings if f.kind in self.hide and f.severity.rank >= self.severity.rank})


class TrustView:
    """The policy over one store's approvals file, read again whenever the file changes."""

    def __init__(self, store_dir: str | Path, policy: TrustPolicy | None = None) -> None:
        self.policy = policy or TrustPolicy()
        self.file = Approvals(store_dir)
        self._stamp: tuple[int, int] | None = None
        self._approvals: dict[str, Approval] = {}

    def approvals(self) -> dict[str, Approval]:
        stamp = self.file.stamp()
        if stamp != self._stamp:
            self._approvals = self.file.load() if stamp is not None else {}
            self._stamp = stamp
        return {**self._approvals, **self.policy.approved}

    def hidden(
        self, findings: Mapping[str, Sequence[Finding]], fingerprints: Mapping[str, str]
    ) -> dict[str, list[str]]:
        """``{tool id: the kinds that hide it}`` for the tools the policy hides now."""
        if not self.policy.hide:
            return {}
        approvals = self.approvals()
        out = {}
        for tool_id, found in findings.items():
            kinds = self.policy.hiding(found)
            if kinds and not approved(approvals, tool_id, fingerprints.get(tool_id)):
                out[tool_id] = kinds
        return out

    def warnings(
        self, tool_id: str, findings: Mapping[str, Sequence[Finding]], fingerprints: Mapping[str, str]
    ) -> dict[str, Any]:
        """``{"warnings": [...]}`` for an answer's tool, with ``"approved": true`` when a person accepted it."""
        found = findings.get(tool_id, ())
        out: dict[str, Any] = {"warnings": [f.short() for f in found]}
        if found and approved(self.approvals(), tool_id, fingerprints.get(tool_id)):
            out["approved"] = True
        return out


def refusal(tool_id: str, kinds: Sequence[str]) -> HiddenTool:
    return HiddenTool(
        f"tool {tool_id} is hidden by this server's trust policy (its {', '.join(kinds)} findings); a person who has "
        f"read it can accept it with: toolkg approve {tool_id}"
    )
