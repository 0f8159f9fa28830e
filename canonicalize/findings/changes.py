"""``changed`` findings: a tool whose text or schema is no longer the one accepted (a "rug pull").

Each build's audit keeps, per tool, the fingerprint of its text (``ToolText.fingerprint``) and, while the
two differ, the fingerprint of its *accepted* text: the text it had when it first appeared, or the one a
person last approved (``toolkg approve``). The next build compares the tool's text with the accepted one:

- a tool seen for the first time is accepted as it is (a new tool is not "changed");
- the same text as accepted: nothing to say;
- an approved text (its fingerprint in the approvals file) becomes the accepted one;
- anything else is ``changed``, and stays so on later builds until it is approved or changes back.

The evidence says what changed: the words added to or removed from the field, when the previous build's
text is at hand (its published snapshot), else which fields; a finding carried over from an earlier build
keeps the evidence it had.
"""

from __future__ import annotations

from collections.abc import Mapping

from toolkg.approvals import Approval, approved
from toolkg.findings import Finding, FindingKind, Previous, Severity, ToolText, safe_evidence, safe_where


def changed_finding(
    tool: ToolText,
    previous: Previous | None,
    old: ToolText | None,
    approvals: Mapping[str, Approval],
) -> tuple[Finding | None, str]:
    """(the tool's changed finding or None, the accepted fingerprint to keep). ``old`` is the tool's text
    at the previous build, when known."""
    current = tool.fingerprint
    if previous is None or approved(approvals, tool.id, current) or current == previous.baseline:
        return None, current
    if current == previous.fingerprint and previous.finding is not None:  # unchanged since the last build
        return previous.finding, previous.baseline
    where, evidence = describe_change(old, tool) if old is not None else ("text", "")
    evidence = evidence or "description or input schema differs from the accepted version"
    finding = Finding(tool.id, FindingKind.CHANGED, Severity.MEDIUM, safe_where(where), safe_evidence(evidence))
    return finding, previous.baseline


def describe_change(old: ToolText, new: ToolText) -> tuple[str, str]:
    """(the first field that changed, what changed in it): words added (+) and removed (-), a field added or
    removed, or the schema's types and required flags."""
    before, after = dict(old.fields), dict(new.fields)
    for where in [w for w, _ in new.fields] + [w for w, _ in old.fields if w not in after]:
        if before.get(where) == after.get(where):
            continue
        if where not in before:
            return where, "added: " + after[where]
        if where not in after:
            return where, "removed: " + before[where]
        return where, _word_diff(before[where], after[where])
    if old.shape != new.shape:
        return "inputSchema", "parameter types, required flags or annotations changed"
    return "text", ""


def _word_diff(before: str, after: str) -> str:
    """The words that changed, as one span each side: '+ added - removed' (the words both texts begin and end
    with are left out, so a sentence slipped into the middle reads whole)."""
    a, b = before.split(), after.split()
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    added, removed = b[start : len(b) - end], a[start : len(a) - end]
    parts = [f"+ {' '.join(added)}"] if added else []
    parts += [f"- {' '.join(removed)}"] if removed else []
    return " ".join(parts) or "whitespace changed"
