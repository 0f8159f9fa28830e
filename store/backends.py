"""Where a store's quads live: two backends behind one protocol.

``ToolStore`` (store/oxigraph_store.py) says *what* to read and write; a backend says *how*:

- ``LocalBackend``: the on-disk Oxigraph database (pyoxigraph), the default. Bulk-loads new graphs,
  takes RocksDB checkpoints for the snapshots the endpoint serves.
- ``RemoteBackend`` (store/remote.py): a SPARQL 1.1 server named by ``<store>/remote.toml``. Every
  write is one request, so one transaction on the server; it publishes no snapshots (the server
  isolates its own readers).

What differs between them is a method of the backend, never a flag the store checks.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from pyoxigraph import NamedNode, Quad, RdfFormat, Store, Triple

from toolkg.disk import disk_full_error, is_read_only, why
from toolkg.errors import ReadOnlyError, StoreError, StoreLockedError

# Below this many quads a write goes through a transaction: each bulk load writes its own table
# files, and many tiny ones cost more than the write-ahead log they save.
BULK_MIN_QUADS = 2_000


class Backend(Protocol):
    """The quad store under a ``ToolStore``: pyoxigraph.Store's reading surface, plus the writes and
    capabilities that differ between a local database and a SPARQL server."""

    publishes_snapshots: bool  # the endpoint reads published snapshots of it (local) or the server (remote)

    def query(
        self,
        query: str,
        use_default_graph_as_union: bool = True,
        substitutions: Any = None,
        prefixes: dict[str, str] | None = None,
    ) -> Any:
        """``prefixes``: declared for the query without a line of its text, so error positions stay the user's."""

    def update(self, update: str) -> None: ...
    def extend(self, quads: Iterable[Quad]) -> None: ...
    def quads_for_pattern(self, subject: Any, predicate: Any, obj: Any, graph: Any) -> Iterable[Quad]: ...
    def named_graphs(self) -> Iterable[Any]: ...
    def contains_named_graph(self, graph: NamedNode) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Quad]: ...
    def dump(self, output: Any, format: RdfFormat) -> None: ...

    def write_new(self, quads: Iterable[Quad], count: int) -> None:
        """Add ``count`` quads to graphs nothing else is writing."""

    def replace_graph(self, graph: NamedNode, triples: Sequence[Triple]) -> None:
        """Swap a whole named graph; it exists afterwards even when empty."""

    def export_order(self, data: Iterable[Any]) -> Iterable[Any]:
        """Quads or triples in the order an export writes them."""

    def backup(self, target: str) -> None:
        """A consistent copy in ``target`` (a snapshot)."""

    def close(self) -> None:
        """Release the database (and its lock) even while something still references the backend."""


class LocalBackend:
    """The on-disk Oxigraph database of a store directory (writable, read-only, or a snapshot)."""

    publishes_snapshots = True

    def __init__(self, database: Path, *, read_only: bool = False, directory: Path | None = None) -> None:
        self.database = database
        self.read_only = read_only
        if read_only:
            self._store = Store.read_only(str(database))
        else:
            self._store = self._open_writable(directory or database.parent)

    def _open_writable(self, directory: Path) -> Store:
        try:
            self.database.mkdir(parents=True, exist_ok=True)
            return Store(str(self.database))
        except OSError as exc:
            if "lock" in str(exc).lower():
                raise StoreLockedError(
                    f"store {directory} is in use by another process (a running build?); try again when it ends"
                ) from None
            if is_read_only(exc):  # RocksDB writes its LOG file even to open: a read-only store fails here
                raise ReadOnlyError(
                    f"store {directory} is read-only ({why(exc)}): this command writes to it; make it writable, "
                    "or give another --store"
                ) from None
            full = disk_full_error(exc, self.database)  # opening replays the write-ahead log into a new file
            if full is not None:
                raise full from None
            raise

    def close(self) -> None:
        # A failed task's traceback (Prefect keeps it) can hold this backend: drop the database itself.
        self.__dict__.pop("_store", None)

    # pyoxigraph.Store's surface, passed through
    def query(
        self,
        query: str,
        use_default_graph_as_union: bool = True,
        substitutions: Any = None,
        prefixes: dict[str, str] | None = None,
    ) -> Any:
        union = use_default_graph_as_union
        return self._store.query(
            query, use_default_graph_as_union=union, substitutions=substitutions, prefixes=prefixes
        )

    def update(self, update: str) -> None:
        self._store.update(update)

    def extend(self, quads: Iterable[Quad]) -> None:
        self._store.extend(quads)

    def quads_for_pattern(self, subject: Any, predicate: Any, obj: Any, graph: Any) -> Iterable[Quad]:
        return self._store.quads_for_pattern(subject, predicate, obj, graph)

    def named_graphs(self) -> Iterable[Any]:
        return self._store.named_graphs()

    def contains_named_graph(self, graph: NamedNode) -> bool:
        return self._store.contains_named_graph(graph)

    def __len__(self) -> int:
        return len(self._store)

    def __iter__(self) -> Iterator[Quad]:
        return iter(self._store)

    def dump(self, output: Any, format: RdfFormat) -> None:
        self._store.dump(output, format=format)

    def write_new(self, quads: Iterable[Quad], count: int) -> None:
        """In bulk when there are many (no transaction, no write-ahead log: three times faster than
        ``Store.extend`` and nothing for the next open to replay), else in one transaction."""
        if count < BULK_MIN_QUADS:
            self._store.extend(quads)
        else:
            self._store.bulk_extend(quads)

    def replace_graph(self, graph: NamedNode, triples: Sequence[Triple]) -> None:
        """Drop the graph, then add the new triples (each one transaction). One SPARQL update holding
        both parses the triples as text and costs twice the time and memory (measured: 1M triples,
        INSERT DATA 154 s / +2.9 GB, extend 57 s / +1.5 GB)."""
        self._store.update(f"DROP SILENT GRAPH {graph}")
        # Streamed: 100k tools' links are 2M quads, a list of which would cost a gigabyte for nothing.
        self.write_new((Quad(t.subject, t.predicate, t.object, graph) for t in triples), len(triples))
        self._store.add_graph(graph)

    def export_order(self, data: Iterable[Any]) -> Iterable[Any]:
        return data  # Oxigraph returns quads grouped already

    def backup(self, target: str) -> None:
        """A RocksDB checkpoint (hard links where possible).

        RocksDB flushes its memtables before a checkpoint, and with the write buffers Oxigraph sets up
        (``optimize_level_style_compaction``: at least two memtables merged per flush) a manual flush can
        wait forever for a second memtable that never comes (RocksDB issue #13280; seen here at the end of
        a 10k-tool build, all threads idle, three runs in four). So the database is closed and opened again
        first: opening replays the write-ahead log into table files, which leaves nothing to flush."""
        if not self.read_only:
            self.__dict__.pop("_store", None)
            try:
                self._store = self._open_writable(self.database.parent)
            except StoreLockedError:
                # A query result in a reference cycle still holds the database, and its lock: collect it, then
                # open. Only then: a full collection costs ~0.5 s in a process with a large heap (a test session,
                # a 100k-tool build), and most builds drop their last reference when the store is popped.
                gc.collect()
                self._store = self._open_writable(self.database.parent)
        self._store.backup(target)


def missing_store(directory: Path) -> StoreError:
    return StoreError(f"no toolkg store at {directory} (run 'toolkg build' first)")
