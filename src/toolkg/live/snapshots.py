"""A live listing written as a manifest snapshot under the store, and what changed since the last one.

``<store>/live/<server-id>.json`` is an MCP ``tools/list`` result plus the server's ``serverInfo``,
``instructions`` and how it was reached (transport and command name or URL; never its env, headers or
arguments). It is canonical JSON (sorted keys), so its bytes change exactly when the listing does: the
build's content hash then skips an unchanged server and reloads a changed one like any manifest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkg.atomic import atomic_output
from toolkg.live.listing import Listing

SNAPSHOT_DIR = "live"


def snapshot_dir(store_dir: str | Path) -> Path:
    return Path(store_dir) / SNAPSHOT_DIR


def snapshot_document(listing: Listing) -> dict[str, Any]:
    """The manifest toolkg's MCP parser reads (``server`` names the graph's server id)."""
    spec = listing.spec
    document: dict[str, Any] = {
        "server": spec.name,
        "serverInfo": listing.server_info,
        "protocolVersion": listing.protocol_version,
        "source": {"configuration": spec.source, **spec.public()},
        "tools": listing.tools,
    }
    if listing.instructions:
        document["instructions"] = listing.instructions
    description = spec.metadata.get("description") or listing.server_info.get("description")
    if description:
        document["description"] = description
    for key in ("version", "homepage"):
        if spec.metadata.get(key) and not (key == "version" and listing.server_info.get("version")):
            document[key] = spec.metadata[key]
    return document


def snapshot_bytes(document: dict[str, Any]) -> bytes:
    return (json.dumps(document, ensure_ascii=False, sort_keys=True, indent=1) + "\n").encode("utf-8")


@dataclass
class ToolChanges:
    """Tools of one server added, removed and changed (same name, different definition) since last time."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


def tool_changes(before: dict[str, Any] | None, after: dict[str, Any]) -> ToolChanges:
    old = _by_name(before.get("tools") if before else [])
    new = _by_name(after.get("tools"))
    return ToolChanges(
        added=sorted(set(new) - set(old)),
        removed=sorted(set(old) - set(new)),
        changed=sorted(name for name in set(old) & set(new) if old[name] != new[name]),
    )


def _by_name(tools: Any) -> dict[str, Any]:
    if not isinstance(tools, list):
        return {}
    return {str(t.get("name")): t for t in tools if isinstance(t, dict)}


def read_snapshot(path: Path) -> dict[str, Any] | None:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def write_snapshot(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` whole (or not at all) unless it already holds it; True when written."""
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path, "wb") as out:
        out.write(data)
    return True
