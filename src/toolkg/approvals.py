"""Approvals: a person's word that a flagged tool's text is fine, pinned to that text.

``toolkg approve TOOL`` records the tool's current text fingerprint (``findings.ToolText.fingerprint``, as
the last build's audit stored it) in ``<store>/approvals.json``, beside the database and outside every
graph: builds neither read it as input nor rewrite it, so an approval survives every rebuild. It holds
while the tool's text keeps that fingerprint; once the text changes the tool is flagged ``changed`` and
hidden again (where ``[toolsearch] hide`` says so) until approved anew. The audit stage reads the file
too: an approved text becomes the one later changes are compared with.

A ``[toolsearch] approved = [...]`` list in ``toolkg mcp --config FILE`` approves too: ``"server::tool"``
whatever its text, ``"server::tool@<fingerprint prefix>"`` that text only (``toolkg approve --list`` prints
the fingerprints).

>>> import tempfile
>>> book = Approvals(tempfile.mkdtemp())
>>> book.approve("mail::send", "ab12" * 16, ["injection"]).fingerprint[:8]
'ab12ab12'
>>> approved(book.load(), "mail::send", "ab12" * 16), approved(book.load(), "mail::send", "ffff" * 16)
(True, False)
>>> approved(config_approvals(["mail::send@ab12ab12"]), "mail::send", "ab12" * 16)
True
>>> book.revoke("mail::send"), book.load()
(True, {})
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from toolkg.atomic import atomic_output
from toolkg.errors import ConfigError

APPROVALS_FILE = "approvals.json"


@dataclass(frozen=True)
class Approval:
    tool: str
    fingerprint: str | None  # None: approved whatever its text (a config entry without @fingerprint)
    at: str = ""  # when (UTC, ISO 8601)
    findings: tuple[str, ...] = ()  # the kinds of finding it had when approved (for the record)
    source: str = "toolkg approve"


def approved(approvals: Mapping[str, Approval], tool_id: str, fingerprint: str | None) -> bool:
    """Whether ``tool_id`` with this text fingerprint is approved."""
    found = approvals.get(tool_id)
    if found is None:
        return False
    return found.fingerprint is None or bool(fingerprint and fingerprint.startswith(found.fingerprint))


def config_approvals(entries: Iterable[str]) -> dict[str, Approval]:
    """``[toolsearch] approved`` entries: ``server::tool`` or ``server::tool@fingerprint-prefix``."""
    out: dict[str, Approval] = {}
    for entry in entries:
        tool, _, prefix = entry.strip().partition("@")
        if "::" not in tool:
            raise ConfigError(
                f"[toolsearch] approved: {entry!r} is not a tool id 'server::tool' (optionally @fingerprint)"
            )
        prefix = prefix.strip().lower()
        if prefix and (len(prefix) < 8 or any(c not in "0123456789abcdef" for c in prefix)):
            raise ConfigError(f"[toolsearch] approved: {entry!r}: a fingerprint is 8 to 64 hex digits")
        out[tool.strip()] = Approval(tool.strip(), prefix or None, source="config")
    return out


class Approvals:
    """The approvals file of one store directory."""

    def __init__(self, store_dir: str | Path) -> None:
        self.path = Path(store_dir) / APPROVALS_FILE

    def load(self) -> dict[str, Approval]:
        """Every approval, by tool id (none when the file is missing)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read {self.path}: {exc}") from None
        tools = data.get("tools") if isinstance(data, dict) else None
        if not isinstance(tools, dict):
            raise ConfigError(f"{self.path} is not an approvals file (no 'tools' object)")
        out = {}
        for tool, entry in tools.items():
            if isinstance(entry, dict) and isinstance(entry.get("fingerprint"), str):
                listed = entry.get("findings")
                kinds = listed if isinstance(listed, list) else []
                out[tool] = Approval(
                    tool, entry["fingerprint"], str(entry.get("at", "")), tuple(map(str, kinds)), "toolkg approve"
                )
        return out

    def stamp(self) -> tuple[int, int] | None:
        """What changes when the file does (modification time, size); None when there is none."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def approve(self, tool: str, fingerprint: str, findings: Iterable[str] = ()) -> Approval:
        entry = Approval(tool, fingerprint, datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), tuple(findings))
        with self._locked() as current:
            current[tool] = entry
        return entry

    def revoke(self, tool: str) -> bool:
        """Forget ``tool``'s approval; False when it had none."""
        with self._locked() as current:
            return current.pop(tool, None) is not None

    @contextmanager
    def _locked(self) -> Iterator[dict[str, Approval]]:
        """The approvals to change, read and written back under a lock (two `toolkg approve` at once both count)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(f".{APPROVALS_FILE}.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            current = self.load()
            before = dict(current)
            yield current
            if current != before:
                tools = {
                    t: {k: v for k, v in asdict(a).items() if k not in ("tool", "source")}
                    for t, a in sorted(current.items())
                }
                with atomic_output(self.path) as out:
                    json.dump({"tools": tools}, out, indent=1, ensure_ascii=False)
                    out.write("\n")
