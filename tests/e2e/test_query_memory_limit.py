"""A query that eats memory, as an attack battery sent it: ``{ ?a ?b ?c . ?d ?e ?f . ?g ?h ?i } ORDER BY ...
LIMIT 1`` grew `toolkg serve`'s SPARQL process by 0.3-0.8 GB/s, past 3 GiB well inside its 30 s timeout, from a
plain GET (an ``<img src>`` on any web page sends one); ``toolkg mcp``'s ``sparql`` tool the same within its
10 s. Now a query is bounded in memory: it is answered with one line, ``query exceeded its memory limit (N
MiB)``, the process is restarted, and the next query is answered.

Each test runs the real CLI with a low limit (512 MiB) under a ceiling of its own (``memory_ceiling``: the whole
process tree killed past 1.5 GiB), so an attack that works cannot take the machine down."""

from __future__ import annotations

import time
import urllib.parse
from pathlib import Path

import anyio
import pytest

from tests.conftest import CASES, TOOLKG
from tests.support.endpoint_helpers import get, request, serve_process
from tests.support.memory_ceiling import memory_ceiling

pytestmark = pytest.mark.slow

ATTACK = "SELECT ?a ?c ?d ?f WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i } ORDER BY ?c ?f ?i LIMIT 1"
LIMIT_MIB = 512
CEILING = 1536 * 2**20
COUNT_TOOLS = "SELECT (COUNT(*) AS ?n) WHERE { ?t a tk:Tool }"


@pytest.fixture(scope="module")
def store(built_store) -> Path:
    return built_store(CASES / "inference" / "shop.json", links=False)


def test_a_query_past_the_endpoints_memory_limit_is_507_and_the_backend_restarts(store: Path) -> None:
    with serve_process(store, "--memory-limit", str(LIMIT_MIB)) as (base, process):
        with memory_ceiling(process.pid, CEILING) as watch:
            started = time.monotonic()
            # A GET with no Origin, as an <img> on another site sends it.
            status, body, _ = request(base + "/query?" + urllib.parse.urlencode({"query": ATTACK}), method="GET")
            took = time.monotonic() - started
        assert not watch.killed, f"the attack passed the test's {CEILING >> 20} MiB ceiling"
        assert status == 507, (status, body)
        assert body.startswith(f"query exceeded its memory limit ({LIMIT_MIB} MiB)") and body.count("\n") == 1
        assert took < 25, f"answered after {took:.1f}s: the memory limit, not the 30 s timeout, must stop it"
        assert watch.peak < LIMIT_MIB * 2**20 + 700 * 2**20, f"peak {watch.peak >> 20} MiB"
        deadline = time.monotonic() + 30
        while (state := get(base + "/status")["backend"])["state"] != "up" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert state["restarts"] >= 1 and "memory limit" in state["last_restart"]["reason"], state
        assert get(base + "/status")["query_memory_limit_mib"] == LIMIT_MIB
        code, answer, _ = request(base + "/query", urllib.parse.urlencode({"query": COUNT_TOOLS}).encode())
        assert code == 200 and '"20"' in answer, answer


def test_a_sparql_tool_query_past_its_memory_limit_fails_in_one_line_and_the_next_works(store: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    server = StdioServerParameters(
        command=str(TOOLKG), args=["mcp", "--store", str(store), "--sparql-memory", str(LIMIT_MIB)]
    )

    async def run():
        async with Client(server, mode="legacy") as client:
            await client.call_tool("sparql", {"query": COUNT_TOOLS})  # the worker is up: watch its tree
            with memory_ceiling(_mcp_pid(), CEILING) as watch:
                started = time.monotonic()
                attacked = await client.call_tool("sparql", {"query": ATTACK})
                took = time.monotonic() - started
            after = await client.call_tool("sparql", {"query": COUNT_TOOLS})
            return attacked, took, watch, after

    attacked, took, watch, after = anyio.run(run)
    assert not watch.killed, f"the attack passed the test's {CEILING >> 20} MiB ceiling"
    text = attacked.content[0].text
    assert attacked.is_error and f"query exceeded its memory limit ({LIMIT_MIB} MiB)" in text, text
    assert "\n" not in text.strip()
    assert took < 9, f"answered after {took:.1f}s: the memory limit, not the 10 s timeout, must stop it"
    assert not after.is_error and after.structured_content["rows"][0]["n"]["value"] == "20", after


def _mcp_pid() -> int:
    """The `toolkg mcp` process this test started (the newest one running this store's command)."""
    import os

    mine = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    args = cmdline.read().split(b"\0")
                with open(f"/proc/{entry}/stat", encoding="ascii") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if parent == os.getpid() and b"mcp" in args and str(TOOLKG).encode() in b" ".join(args):
                mine.append(int(entry))
    assert len(mine) == 1, mine
    return mine[0]
