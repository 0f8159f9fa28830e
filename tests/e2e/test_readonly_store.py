"""A read-only store or cache folder (issue 40): readers still answer, a build says in one line what is
read-only and what to do, and a cache that cannot be written degrades to reading it (or to memory) with a
notice, never "internal error".

Read-only for real: a read-only bind mount (tests/support/mounts.py), or permissions where this process may
not mount and is not root.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import CASES
from tests.support.endpoint_helpers import serving, sparql
from tests.support.mounts import read_only
from tests.support.stores import comparable

CATALOG = [CASES / "inference" / "shop.json", CASES / "openai_tools.json", CASES / "petstore.yaml"]
TOOLS = 26


@pytest.fixture
def store(built_store, tmp_path) -> Path:
    return built_store.copy(CATALOG, tmp_path / "store")


def _clean(stderr: str) -> None:
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr[-2000:]


def test_a_read_only_store_answers_stats_query_deps_and_retrieve(cli, store):
    with read_only(store):
        stats = cli("stats", "--store", str(store), "--json")
        assert stats.returncode == 0, stats.stderr
        assert json.loads(stats.stdout)["totals"]["tools"] == TOOLS

        query = cli("query", "--store", str(store), "--json", "SELECT (COUNT(*) AS ?n) { ?t a tk:Tool }")
        assert query.returncode == 0, query.stderr
        assert str(TOOLS) in query.stdout

        deps = cli("deps", "--store", str(store), "--json")
        assert deps.returncode == 0, deps.stderr

        found = cli("retrieve", "--store", str(store), "--json", "-k", "3", "add a new pet to the store")
        assert found.returncode == 0, found.stderr
        _clean(found.stderr)
        assert json.loads(found.stdout)["tools"]
        # its vector cache is read as it is, and says so once
        assert len(re.findall(r"toolkg: notice: cache .*embeddings\.sqlite cannot be written", found.stderr)) == 1


def test_a_read_only_store_is_served(store):
    with read_only(store), serving(store) as base:
        assert sparql(base, "SELECT (COUNT(*) AS ?n) { ?t a tk:Tool }") == [{"n": str(TOOLS)}]


def test_a_build_into_a_read_only_store_is_one_line(cli, store):
    with read_only(store):
        result = cli("build", *map(str, CATALOG), "--store", str(store))
    assert result.returncode == 1, result.stderr[-2000:]
    _clean(result.stderr)
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith(f"toolkg: error: store {store} is read-only (") and "another --store" in line, line


def test_read_only_cache_folders_degrade_with_a_notice(cli, store, tmp_path):
    """The store's own caches (<store>/cache) and the per-machine one (TOOLKG_CACHE_DIR) read-only: a
    forced rebuild reads what they hold and makes the same graph; retrieve answers."""
    before = comparable(store)
    machine = tmp_path / "machine-cache"
    machine.mkdir()
    env = {"TOOLKG_CACHE_DIR": str(machine), "TOOLKG_SHARED_VECTORS": "1"}  # empty: nothing of a user's reaches it
    with read_only(store / "cache"), read_only(machine):
        built = cli("build", *map(str, CATALOG), "--store", str(store), "--force", "-q", env=env)
        found = cli("retrieve", "--store", str(store), "-k", "3", "add a new pet to the store", env=env)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    _clean(built.stderr)
    notices = [line for line in built.stderr.splitlines() if line.startswith("toolkg: notice: ")]
    assert any("offline.sqlite cannot be written" in line for line in notices), built.stderr[-2000:]
    assert any(str(machine) in line for line in notices), built.stderr[-2000:]
    assert comparable(store) == before  # the same graph
    assert found.returncode == 0, found.stderr
    _clean(found.stderr)
