"""The SPARQL sandbox's answers for `toolkg mcp`'s ``sparql`` tool (``rows``): the tool's JSON rows, capped in
number and in bytes, from the same process code that answers `toolkg serve` (``run_query``). The process
itself (no address, timeout, memory limit, restart) is exercised by tests/e2e/test_toolsearch_mcp.py,
tests/e2e/test_query_memory_limit.py and tests/e2e/test_endpoint_backend_guard.py."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from pyoxigraph import Literal, NamedNode, Quad, Store

from toolkg.store.sparql_sandbox import Backend
from toolkg.store.sparql_sandbox_worker import run_query

GRAPH = NamedNode("urn:g")


@pytest.fixture
def store() -> Store:
    memory = Store()
    memory.extend(
        [Quad(NamedNode(f"urn:s{i}"), NamedNode("urn:p"), Literal(f"o{i}", language="en"), GRAPH) for i in range(5)]
    )
    return memory


def _rows(store: Store, query: str, rows: int, max_result_bytes: int = 1 << 20) -> tuple[int, Any]:
    status, content_type, body = run_query(store, {"query": query, "rows": rows}, False, max_result_bytes)
    return status, json.loads(body) if content_type == "application/json" else body.decode()


def test_select_rows_stop_at_the_cap_and_say_so(store: Store) -> None:
    status, answer = _rows(store, "SELECT ?s ?o WHERE { ?s <urn:p> ?o } ORDER BY ?s", 3)
    assert status == 200 and isinstance(answer, dict)
    assert answer["variables"] == ["s", "o"] and answer["truncated"] is True and len(answer["rows"]) == 3
    assert answer["rows"][0] == {
        "s": {"type": "uri", "value": "urn:s0"},
        "o": {"type": "literal", "value": "o0", "xml:lang": "en"},
    }
    assert _rows(store, "SELECT ?s WHERE { ?s <urn:p> ?o }", 5)[1]["truncated"] is False


def test_ask_and_graph_answers_and_a_syntax_error_in_one_line(store: Store) -> None:
    assert _rows(store, "ASK { ?s <urn:p> ?o }", 1) == (200, {"type": "ask", "boolean": True})
    status, graph = _rows(store, "CONSTRUCT { ?s <urn:q> 1 } WHERE { ?s <urn:p> ?o }", 2)
    assert status == 200 and isinstance(graph, dict) and graph["truncated"] is True
    assert graph["triples"][0][2] == {
        "type": "literal",
        "value": "1",
        "datatype": "http://www.w3.org/2001/XMLSchema#integer",
    }
    status, message = _rows(store, "SELEC nonsense", 1)
    assert status == 400 and isinstance(message, str) and message.startswith("invalid SPARQL: error at 1:")


def test_rows_past_the_byte_cap_are_a_413_not_an_answer(store: Store) -> None:
    status, message = _rows(store, "SELECT ?s ?o WHERE { ?s <urn:p> ?o }", 5, max_result_bytes=100)
    assert status == 413 and message == "result larger than 0 MiB: add a LIMIT"
    assert _rows(store, "SELECT ?s ?o WHERE { ?s <urn:p> ?o }", 5, max_result_bytes=10_000)[0] == 200


def test_the_process_answers_rows_over_its_socket(tmp_path: Path, store: Store) -> None:
    """The parent's side: the same request through a real sandbox process over a snapshot on disk."""
    snapshot = tmp_path / "snapshot"
    on_disk = Store(str(snapshot))
    on_disk.extend(list(store))
    on_disk.flush()
    del on_disk
    backend = Backend.start(snapshot, threads=1)
    try:
        status, body, content_type = backend.ask("SELECT ?s WHERE { ?s <urn:p> ?o }", time.monotonic() + 20, rows=2)
        assert (status, content_type) == (200, "application/json")
        assert json.loads(body)["truncated"] is True and len(json.loads(body)["rows"]) == 2
        assert backend.ask("ASK {}", time.monotonic() + 20)[:2] == (200, b'{"head":{},"boolean":true}')
    finally:
        backend.stop(grace=0)
    assert not backend.alive()
