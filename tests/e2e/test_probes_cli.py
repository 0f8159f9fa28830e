"""Issue 52: the build makes the catalog's probe queries, so no query pays for them; after a sync that changes
the catalog its first query makes them once (a sync that made them lost its speed over a rebuild)
(``toolkg.retrieval.probes``; the index stage, ``flows/stages/retrieval_index.py``)."""

from __future__ import annotations

import json
import shutil
import sqlite3

import anyio
import pytest

from tests.conftest import CASES, TOOLKG
from toolkg.paths import store_cache

MADE_AT_QUERY = "probe queries at the first query"  # what a retrieve says when it has to make them


def probe_keys(store) -> list[str]:
    """The catalog digests the store's probe cache holds (one catalog per store)."""
    path = store_cache(store, "probes")
    if not path.exists():
        return []
    with sqlite3.connect(path) as db:
        return [row[0] for row in db.execute("SELECT key FROM probes")]


def first_search_over_mcp(store, errlog) -> str:
    """The text of the first ``search_tools`` answer of a fresh ``toolkg mcp`` over stdio (its stderr into
    ``errlog``), as an agent's SDK client asks it."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def run() -> str:
        server = StdioServerParameters(command=str(TOOLKG), args=["mcp", "--store", str(store)])
        async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            found = await session.call_tool("search_tools", {"query": "make the screen brighter", "k": 3})
            return "".join(getattr(part, "text", "") for part in found.content)

    return anyio.run(run)


@pytest.mark.slow  # three builds and two MCP servers (about a minute)
def test_the_build_makes_the_probes_and_the_first_query_after_a_sync_makes_them_again(cli, cli_process, tmp_path):
    # each query in its own process: what a query says once (say_once) is said once per process
    folder = tmp_path / "catalog"
    folder.mkdir()
    shop = json.loads((CASES / "inference" / "shop.json").read_text())
    (folder / "shop.json").write_text(json.dumps(shop[:-1]))
    shutil.copy(CASES / "mcp_bing.json", folder / "mcp_bing.json")
    store = tmp_path / "store"
    built = cli("build", str(folder), "--store", str(store))
    assert built.returncode == 0, built.stderr
    assert "probe queries made" in built.stdout
    built_keys = probe_keys(store)
    assert len(built_keys) == 1  # the build made them

    first = cli_process("retrieve", "make the screen brighter", "--store", str(store))
    assert first.returncode == 0, first.stderr
    assert MADE_AT_QUERY not in first.stderr  # warm: the first query made no probes

    (folder / "shop.json").write_text(json.dumps(shop))  # set_screen_brightness is new
    synced = cli("build", str(folder), "--store", str(store), "--only", "shop")
    assert synced.returncode == 0, synced.stderr
    assert "1 tool(s) changed" in synced.stdout
    assert "probe queries" not in synced.stdout  # the sync made none (the tmp path says "probe")
    assert probe_keys(store) == built_keys  # the old catalog's, which the changed catalog's digest does not match
    after = cli_process("retrieve", "make the screen brighter", "--store", str(store), "--json")
    assert after.returncode == 0, after.stderr
    assert MADE_AT_QUERY in after.stderr  # the first query after the sync made them, and says so
    assert "set_screen_brightness" in after.stdout
    synced_keys = probe_keys(store)
    assert len(synced_keys) == 1 and synced_keys != built_keys  # the changed catalog's probes, kept
    again = cli_process("retrieve", "make the screen brighter", "--store", str(store))
    assert again.returncode == 0, again.stderr
    assert MADE_AT_QUERY not in again.stderr  # made once: the next query is warm

    with (tmp_path / "mcp.err").open("w") as errlog:
        answer = first_search_over_mcp(store, errlog)
    assert "set_screen_brightness" in answer
    assert MADE_AT_QUERY not in (tmp_path / "mcp.err").read_text()  # the MCP search finds them made

    # A store without them (built before the index stage made them) still answers, making them once.
    store_cache(store, "probes").unlink()
    cold = cli_process("retrieve", "make the screen brighter", "--store", str(store))
    assert cold.returncode == 0, cold.stderr
    assert MADE_AT_QUERY in cold.stderr
    assert probe_keys(store) == synced_keys
    store_cache(store, "probes").unlink()
    with (tmp_path / "cold.err").open("w") as errlog:
        first_search_over_mcp(store, errlog)
    assert MADE_AT_QUERY in (tmp_path / "cold.err").read_text()  # what the MCP check would see if cold
