"""Read-only SPARQL with a timeout and a row cap, for agents: queries run in a child process on the snapshot.

An Oxigraph query cannot be interrupted from Python, so a query that runs past its time is stopped by
ending the process that runs it (the next query starts a fresh one). Queries are checked first
(``toolkg.store.query_guard``: updates, SERVICE, and sizes and nestings that overflow Oxigraph are refused)
and run on a large stack.

A query is bounded in memory too (``toolkg.memory_guard``): the child limits what it may allocate past what it
holds once its query thread exists (``RLIMIT_DATA``; pyoxigraph's allocator aborts the child at the limit, a
refused Python allocation is a ``MemoryError`` answered here), and the parent kills a child whose resident
memory passes the limit. Either way the caller hears ``query exceeded its memory limit (N MiB)`` and the next
query starts a fresh child. The child's stderr goes to a file the parent reads to tell a child that hit its
limit (Rust's ``memory allocation of N bytes failed``) from one that crashed.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import tempfile
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from toolkg.errors import RequestError
from toolkg.memory_guard import RssWatchdog, exceeded, limit_data, ran_out_of_memory
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


def _serve(snapshot: str, connection, memory_limit_mib: int, stderr_path: str) -> None:
    """The child: open the snapshot read-only, answer queries until the pipe closes, on one large-stack thread
    (made before the memory limit is set: its stack's reservation is not what a query uses)."""
    from toolkg.store.oxigraph_store import ToolStore

    errors = os.open(stderr_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(errors, 2)  # read by the parent when this process dies (see the module doc)
    os.dup2(2, 1)  # under `toolkg mcp` over stdio, the inherited standard output is the protocol's pipe
    os.close(errors)

    store = ToolStore.open_snapshot(Path(snapshot))
    on_large_stack(lambda: _answer_all(store, connection, memory_limit_mib))


def _answer_all(store, connection, memory_limit_mib: int) -> None:
    if memory_limit_mib:
        limit_data(memory_limit_mib * 2**20)
    connection.send(("ready", None))
    while True:
        try:
            query, max_rows = connection.recv()
        except EOFError:
            return
        try:
            connection.send(("ok", answer(store, query, max_rows)))
        except SyntaxError as exc:
            connection.send(("error", syntax_error_line(exc, query)))
        except MemoryError:
            connection.send(("error", exceeded(memory_limit_mib)))
        except Exception as exc:  # noqa: BLE001 - the message goes back to the caller as one line
            connection.send(("error", f"{type(exc).__name__}: {exc}"))


MEMORY_LIMIT_MIB = 1024  # toolkg mcp --sparql-memory
START_TIMEOUT_S = 60.0


class SparqlWorker:
    def __init__(self, snapshot: Path, memory_limit_mib: int = MEMORY_LIMIT_MIB) -> None:
        self.snapshot = snapshot
        self.memory_limit_mib = memory_limit_mib
        self._process: BaseProcess | None = None
        self._connection: Connection | None = None
        self._watchdog: RssWatchdog | None = None
        self._stderr: str | None = None

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")  # no copy of the parent's threads and open store
        parent, child = context.Pipe()
        handle, self._stderr = tempfile.mkstemp(prefix="toolkg-sparql-", suffix=".stderr")
        os.close(handle)
        arguments = (str(self.snapshot), child, self.memory_limit_mib, self._stderr)
        self._process = context.Process(target=_serve, args=arguments, daemon=True)
        self._process.start()
        child.close()
        self._connection = parent
        if not parent.poll(START_TIMEOUT_S):
            self.close()
            raise RequestError(f"the SPARQL worker did not start within {START_TIMEOUT_S:g}s")
        try:
            parent.recv()  # ("ready", None), once the snapshot is open and the limit set
        except (EOFError, OSError):
            reason = self._last_error()
            self.close()
            raise RequestError(f"the SPARQL worker could not start: {reason}") from None
        pid = self._process.pid
        assert pid is not None, "start() gave it one"
        if self.memory_limit_mib:  # started once ready: what the child holds then is its baseline
            self._watchdog = RssWatchdog(pid, self.memory_limit_mib * 2**20)

    def _stderr_tail(self, size: int = 8192) -> str:
        try:
            with open(self._stderr or "", "rb") as errors:
                errors.seek(max(os.fstat(errors.fileno()).st_size - size, 0))
                return errors.read().decode(errors="replace")
        except OSError:
            return ""

    def _last_error(self) -> str:
        lines = self._stderr_tail().strip().splitlines()
        return lines[-1] if lines else "(no message)"

    def _out_of_memory(self) -> bool:
        if not self.memory_limit_mib:
            return False
        # The tail, not the last line: Rust's allocator may print a backtrace after its message.
        return (self._watchdog is not None and self._watchdog.killed) or ran_out_of_memory(self._stderr_tail())

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
            process = self._process
            if process is not None:
                process.join(1)  # its pipe closes a moment before it can be reaped
            out_of_memory = self._out_of_memory()
            self.close()
            if out_of_memory:
                raise RequestError(exceeded(self.memory_limit_mib) + " (the SPARQL worker was restarted)") from None
            raise RequestError("the query ended the SPARQL worker (it was restarted)") from None
        if status == "error":
            raise RequestError(payload)
        return payload

    def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.stop()
        if self._process is not None:
            self._process.kill()
            self._process.join(5)
            if self._connection is not None:  # set with the process
                self._connection.close()
        if self._stderr is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._stderr)
        self._process = self._connection = self._watchdog = self._stderr = None
