"""Read-only snapshots of a store, published by the writer, for the SPARQL endpoint.

Oxigraph documents a read-only open beside a live writer as undefined behaviour, so the
endpoint never reads the database a build writes. Instead the writer, which holds the lock,
publishes a snapshot at the end of every build (``Store.backup``: a RocksDB checkpoint, hard
links on the same file system, so it costs milliseconds and almost no disk) and then points
``snapshots/CURRENT`` at it with an atomic rename. ``toolkg serve`` serves the snapshot
CURRENT names and swaps to a new one when CURRENT changes.

Layout::

    <store>/snapshots/<run-id>/   one consistent copy per published build
    <store>/snapshots/CURRENT     the name of the newest one

The two newest snapshots are kept: the one just published and the one an endpoint may still be
answering from while it swaps.
"""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

from toolkg.errors import StoreError
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.remote import CONFIG_FILE

KEEP = 2


def snapshots_dir(store_dir: str | Path) -> Path:
    return Path(store_dir) / "snapshots"


def current_snapshot(store_dir: str | Path) -> Path | None:
    """The newest published snapshot, or None before the first one."""
    pointer = snapshots_dir(store_dir) / "CURRENT"
    try:
        name = pointer.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    path = snapshots_dir(store_dir) / name
    return path if path.is_dir() else None


def publish_snapshot(store: ToolStore, name: str) -> Path:
    """Checkpoint ``store`` into ``snapshots/<name>``, point CURRENT at it, drop all but the newest."""
    root = snapshots_dir(store.directory)
    root.mkdir(parents=True, exist_ok=True)
    target = root / name
    if target.exists():
        shutil.rmtree(target)
    store.backup(target)
    pointer = root / "CURRENT"
    scratch = root / f".CURRENT.{os.getpid()}"
    scratch.write_text(name + "\n", encoding="utf-8")
    os.replace(scratch, pointer)  # atomic: a reader sees the old name or the new one
    for old in sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)[:-KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    return target


def ensure_snapshot(store_dir: str | Path) -> Path:
    """The current snapshot; a store built before snapshots existed gets its first one now.

    That needs the write lock, so it fails with one line while a build holds it.
    """
    found = current_snapshot(store_dir)
    if found is not None:
        return found
    if (Path(store_dir) / CONFIG_FILE).exists():
        raise StoreError(
            f"{store_dir} keeps its graph on a SPARQL server: query that server; snapshots are on-disk only"
        )
    if not (Path(store_dir) / "oxigraph").exists():
        raise StoreError(f"no toolkg store at {store_dir} (run 'toolkg build PATH... --store {store_dir}' first)")
    with ToolStore(store_dir) as store:
        return publish_snapshot(store, datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-snapshot"))
