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

A build publishes in two steps (``prepare_snapshot``, then ``PreparedSnapshot.publish``): the checkpoint
and the file naming it are written first, and the build makes them current, by a rename that needs no disk
space, only once everything else it writes (its run summary last) is on disk. A build that fails before
(a full disk, any error) discards what it prepared, and the previous snapshot stays current.

Two snapshots are kept: the one just published and the one it replaced, which an endpoint may still be
answering from while it swaps.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from toolkg.atomic import fsync_folder
from toolkg.disk import writable
from toolkg.errors import StoreError
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.remote import CONFIG_FILE

POINTER = "CURRENT"


def snapshots_dir(store_dir: str | Path) -> Path:
    return Path(store_dir) / "snapshots"


def current_snapshot(store_dir: str | Path) -> Path | None:
    """The newest published snapshot, or None before the first one."""
    pointer = snapshots_dir(store_dir) / POINTER
    try:
        name = pointer.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    if not name:
        return None
    path = snapshots_dir(store_dir) / name
    return path if path.is_dir() else None


@dataclass
class PreparedSnapshot:
    """A checkpoint of the store and the pointer file naming it, written but not yet current."""

    path: Path
    pointer: Path  # the scratch file that becomes snapshots/CURRENT
    published: bool = False

    @property
    def name(self) -> str:
        return self.path.name

    def publish(self) -> Path:
        """Make the checkpoint current (one rename: a reader sees the old name or the new one), then drop every
        snapshot but it and the one it replaced."""
        root = self.path.parent
        replaced = current_snapshot(root.parent)
        os.replace(self.pointer, root / POINTER)
        self.published = True
        fsync_folder(root)
        keep = {self.name, replaced.name if replaced else ""}
        for old in root.iterdir():
            if old.is_dir() and old.name not in keep:
                shutil.rmtree(old, ignore_errors=True)
            elif old.name.startswith(f".{POINTER}."):  # a pointer a killed build prepared and never published
                with contextlib.suppress(OSError):
                    old.unlink()
        return self.path

    def discard(self) -> None:
        """Remove what was prepared, unless it was published."""
        if not self.published:
            _remove(self.path, self.pointer)


def prepare_snapshot(store: ToolStore, name: str) -> PreparedSnapshot:
    """Checkpoint ``store`` into ``snapshots/<name>`` and write the pointer naming it, not yet current; a
    failure (a full disk) leaves neither behind."""
    root = snapshots_dir(store.directory)
    root.mkdir(parents=True, exist_ok=True)
    target = root / name
    scratch = root / f".{POINTER}.{name}.{os.getpid()}"
    if target.exists():
        shutil.rmtree(target)
    try:
        store.backup(target)
        with scratch.open("w", encoding="utf-8") as out:
            out.write(name + "\n")
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        _remove(target, scratch)
        raise
    return PreparedSnapshot(target, scratch)


def publish_snapshot(store: ToolStore, name: str) -> Path:
    """Checkpoint ``store`` into ``snapshots/<name>`` and make it current at once (``toolkg.flows.sync``,
    and a store's first snapshot)."""
    return prepare_snapshot(store, name).publish()


def _remove(folder: Path, pointer: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):
        pointer.unlink()


def ensure_snapshot(store_dir: str | Path) -> Path:
    """The current snapshot; a store built before snapshots existed gets its first one now.

    That needs the write lock, so it fails with one line while a build holds it. A read-only store without
    one is served from its database itself: nothing can write it, so nothing can change under a reader.
    """
    found = current_snapshot(store_dir)
    if found is not None:
        return found
    if (Path(store_dir) / CONFIG_FILE).exists():
        raise StoreError(
            f"{store_dir} keeps its graph on a SPARQL server: query that server; snapshots are on-disk only"
        )
    database = Path(store_dir) / "oxigraph"
    if not database.exists():
        raise StoreError(f"no toolkg store at {store_dir} (run 'toolkg build PATH... --store {store_dir}' first)")
    if not writable(database):
        return database
    with ToolStore(store_dir) as store:
        return publish_snapshot(store, datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-snapshot"))
