"""A local store's checkpoint: the database is closed and opened again first (RocksDB issue #13280, see
LocalBackend.backup), with a full garbage collection only when something still holds the closed database."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from pyoxigraph import NamedNode, Quad, Store

from toolkg.store import backends
from toolkg.store.backends import LocalBackend

QUAD = Quad(NamedNode("http://example.org/s"), NamedNode("http://example.org/p"), NamedNode("http://example.org/o"))


class _Cycle:
    """An object in a reference cycle: only the garbage collector frees it (and what it holds)."""

    def __init__(self, held: object) -> None:
        self.held = held
        self.me = self


@pytest.fixture
def collections(monkeypatch) -> list[int]:
    """The full collections backup asks for (the real ones still run)."""
    asked: list[int] = []
    real = gc.collect  # backends.gc is the gc module itself

    def collect(generation: int = 2) -> int:
        asked.append(generation)
        return real(generation)

    monkeypatch.setattr(backends.gc, "collect", collect)
    return asked


def _backend(tmp_path: Path) -> LocalBackend:
    backend = LocalBackend(tmp_path / "db")
    backend.write_new([QUAD], 1)
    return backend


def _checkpointed(target: Path) -> list[Quad]:
    return list(Store.read_only(str(target)).quads_for_pattern(None, None, None, None))


def test_a_checkpoint_with_nothing_holding_the_database_needs_no_collection(tmp_path, collections):
    backend = _backend(tmp_path)
    backend.backup(str(tmp_path / "checkpoint"))
    assert collections == []
    assert _checkpointed(tmp_path / "checkpoint") == [QUAD]
    assert list(backend.quads_for_pattern(None, None, None, None)) == [QUAD]  # open again, writable
    backend.write_new([Quad(QUAD.subject, QUAD.predicate, NamedNode("http://example.org/o2"))], 1)


def test_a_result_left_in_a_cycle_is_collected_so_the_database_can_reopen(tmp_path, collections):
    backend = _backend(tmp_path)
    gc.disable()  # or an automatic collection could free the cycle first, and the test would prove nothing
    try:
        kept = _Cycle(backend.quads_for_pattern(None, None, None, None))
        del kept
        backend.backup(str(tmp_path / "checkpoint"))
    finally:
        gc.enable()
    assert collections == [2]
    assert _checkpointed(tmp_path / "checkpoint") == [QUAD]
