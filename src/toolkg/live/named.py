"""The MCP configurations this user named on a toolkg command line: the only ones ``call_tool`` starts
servers from without ``--live``.

A store's live snapshot says which configuration its server was listed from. That is the store's word, and a
store may come from someone else: its snapshot could name a configuration it ships beside itself (a relative
path resolves against the cwd of whoever runs ``toolkg mcp``) or any file on the machine, whose command
``call_tool`` would then run as the user. So every configuration a build of this user lists (named on its
command line: ``toolkg.live`` never lists one found in a folder) is noted here, per user and outside any store
(``NAMED_FILE`` in toolkg's config folder, 0600), as an absolute path; ``call_tool`` starts a server from a
snapshot's configuration only when it is noted here, and otherwise asks for ``--live FILE``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from toolkg.atomic import atomic_output
from toolkg.paths import config_dir, private_folder

NAMED_FILE = "live-configurations.json"
MAX_NAMED = 1000  # the most recent ones kept: a user names a handful, a script may name many


def _path() -> Path:
    return config_dir() / NAMED_FILE


def named_configurations() -> list[str]:
    """The absolute paths noted, oldest first (none when the file is missing or unreadable)."""
    try:
        document = json.loads(_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    listed = document.get("configurations") if isinstance(document, dict) else None
    return [p for p in listed if isinstance(p, str) and os.path.isabs(p)] if isinstance(listed, list) else []


def remember(paths: Iterable[str]) -> None:
    """Note these configuration files (made absolute) as named by this user. Best effort: a config folder that
    cannot be written leaves ``call_tool`` asking for ``--live FILE``, which is the safe side."""
    fresh = [str(Path(p).resolve()) for p in paths]
    if not fresh:
        return
    known = named_configurations()
    if all(p in known for p in fresh):
        return
    kept = [p for p in known if p not in fresh] + list(dict.fromkeys(fresh))
    with contextlib.suppress(OSError):
        private_folder(_path().parent)
        with atomic_output(_path(), "w") as out:
            out.write(json.dumps({"configurations": kept[-MAX_NAMED:]}, indent=1) + "\n")
        os.chmod(_path(), 0o600)


def was_named(path: str) -> bool:
    """Whether ``path``, an absolute path as a snapshot records it, is a configuration this user named."""
    return os.path.isabs(path) and str(Path(path).resolve()) in {str(Path(p).resolve()) for p in named_configurations()}
