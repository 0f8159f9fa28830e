"""A live server's listing wins over a static catalog's definition of the same server id.

A catalog file that defines a server id a live configuration also names would otherwise overlay the live
server: which of the two loads first owns the id's graph (``store.loading``), so a static file could replace
the tools a server listed and add tools of its own, which ``toolkg mcp``'s ``call_tool`` then sent to the real
server. Instead, for every server listed live this run:

- a static manifest's definition of that id is quarantined with the reason (the rest of the file loads);
- a static manifest that owned the id in an earlier build and is read again this run is parsed again (even if
  unchanged) and loaded before the live snapshots, so its reload drops the id's graph and the listing takes it;
- a static manifest that owns the id but is not among this run's inputs cannot be reloaded: then the listing is
  refused (as before, "already defined by ...") and its snapshot file is removed, so that nothing of a refused
  listing stays for a later ``call_tool`` to route by.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from toolkg.live.snapshots import snapshot_dir
from toolkg.ontology.graphs import server_graph
from toolkg.store.oxigraph_store import ManifestRecord


@dataclass(frozen=True)
class LivePrecedence:
    """This run's live snapshots, the server ids they hold, and the static manifests to read again for them."""

    snapshots: frozenset[str] = frozenset()  # the live snapshot files among the run's manifests
    reserved: Mapping[str, str] = field(default_factory=dict)  # server id -> the snapshot file that lists it
    reread: frozenset[str] = frozenset()  # static manifests owning a reserved id, read again and loaded first

    @classmethod
    def of(cls, files: Iterable[str], store_dir: str | Path, records: Mapping[str, ManifestRecord]) -> LivePrecedence:
        folder = snapshot_dir(store_dir).resolve()
        present = list(files)
        snapshots = frozenset(f for f in present if Path(f).parent == folder)
        reserved = {Path(f).stem: f for f in snapshots}  # a snapshot is named after its server id
        graphs = {server_graph(server).value for server in reserved}
        reread = frozenset(
            path for path in present if path not in snapshots and path in records and graphs & set(records[path].graphs)
        )
        return cls(snapshots, reserved, reread)

    def ordered(self, files: list[str]) -> list[str]:
        """The run's files with the live snapshots last: a static owner's reload drops the id's graph first."""
        return [f for f in files if f not in self.snapshots] + [f for f in files if f in self.snapshots]

    def refused(self, path: str, refused_servers: Iterable[str]) -> str:
        """After the load of ``path`` refused ``refused_servers``: a live snapshot refused is removed (nothing of
        it stays); returns what to add to the quarantine reason ('' for a static manifest)."""
        if path not in self.snapshots or Path(path).stem not in set(refused_servers):
            return ""
        with contextlib.suppress(FileNotFoundError):
            Path(path).unlink()
        return (
            "; its live listing is not kept (build with that file among the PATHs, or --prune it, for the live "
            "server to take the id)"
        )
