"""Read-only SPARQL with a timeout and a row cap, for agents: queries run in a child process on the snapshot.

An Oxigraph query cannot be interrupted from Python, so a query that runs past its time is stopped by
ending the process that runs it (the next query starts a fresh one). Queries are checked first
(``toolkg.store.query_guard``: updates, SERVICE, and sizes and nestings that overflow Oxigraph are refused)
and run on a large stack.
"""

from __future__ import annotations

import multiprocessing
from functools import partial
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from toolkg.errors import RequestError
from toolkg.store.query_guard import QueryRefused, check_query, on_large_stack, syntax_error_line


def _term(term: Any) -> dict[str, str]:
    from pyoxigraph import BlankNode, Literal, NamedNode

    if isinstance(term, NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, Literal):
        out = {"type": "literal", "value": term.value}
        if term.language:
            out["xml:lang"] = term.language
        elif term.datatype.value != "http://www.w3.org/2001/XMLSchema#string":
            out["datatype"] = term.datatype.value
        return out
    return {"type": "triple", "value": str(term)}


def answer(store, query: str, max_rows: int) -> dict[str, Any]:
    """One query's result as SPARQL-JSON-like values: SELECT rows, ASK's boolean or a graph's triples."""
    from pyoxigraph import QueryBoolean, QuerySolutions

    result = store.query(query)
    if isinstance(result, QueryBoolean):
        return {"type": "ask", "boolean": bool(result)}
    rows: list = []  # SELECT: dicts of variable -> term; a graph: [subject, predicate, object] lists
    truncated = False
    if isinstance(result, QuerySolutions):
        names = [v.value for v in result.variables]
        for solution in result:
            if len(rows) == max_rows:
                truncated = True
                break
            rows.append({n: _term(solution[n]) for n in names if solution[n] is not None})
        return {"type": "select", "variables": names, "rows": rows, "truncated": truncated}
    for triple in result:
        if len(rows) == max_rows:
            truncated = True
            break
        rows.append([_term(triple.subject), _term(triple.predicate), _term(triple.object)])
    return {"type": "graph", "triples": rows, "truncated": truncated}


def _serve(snapshot: str, connection) -> None:
    """The child: open the snapshot read-only, answer queries until the pipe closes."""
    import os

    from toolkg.store.oxigraph_store import ToolStore

    os.dup2(2, 1)  # under `toolkg mcp` over stdio, the inherited standard output is the protocol's pipe

    store = ToolStore.open_snapshot(Path(snapshot))
    while True:
        try:
            query, max_rows = connection.recv()
        except EOFError:
            return
        try:
            connection.send(("ok", on_large_stack(partial(answer, store, query, max_rows))))
        except SyntaxError as exc:
            connection.send(("error", syntax_error_line(exc, query)))
        except Exception as exc:  # noqa: BLE001 - the message goes back to the caller as one line
            connection.send(("error", f"{type(exc).__name__}: {exc}"))


class SparqlWorker:
    def __init__(self, snapshot: Path) -> None:
        self.snapshot = snapshot
        self._process: BaseProcess | None = None
        self._connection: Connection | None = None

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")  # no copy of the parent's threads and open store
        parent, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(str(self.snapshot), child), daemon=True)
        self._process.start()
        child.close()
        self._connection = parent

    def run(self, query: str, timeout: float, max_rows: int) -> dict[str, Any]:
        if not isinstance(query, str) or not query.strip():
            raise RequestError("query must be a non-empty SPARQL string")
        try:  # updates, SERVICE and shapes that overflow Oxigraph's stack never reach it
            check_query(query)  # (the store declares the project's prefixes itself)
        except QueryRefused as exc:
            raise RequestError(str(exc)) from None
        if self._process is None or not self._process.is_alive():
            self._start()
        connection = self._connection
        assert connection is not None, "_start() opened it"
        connection.send((query, max_rows))
        if not connection.poll(timeout):
            self.close()  # the only way to stop a running Oxigraph query
            raise RequestError(f"query stopped after {timeout:g}s (narrow it, or add a LIMIT)")
        try:
            status, payload = connection.recv()
        except (EOFError, OSError):  # the worker died on this query; the next one starts a fresh worker
            self.close()
            raise RequestError("the query ended the SPARQL worker (it was restarted)") from None
        if status == "error":
            raise RequestError(payload)
        return payload

    def close(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.join(5)
            if self._connection is not None:  # set with the process
                self._connection.close()
        self._process = self._connection = None
