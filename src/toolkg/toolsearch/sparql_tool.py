"""The MCP ``sparql`` tool's queries: read-only SPARQL with a timeout, a memory limit and a row cap, for agents.

They run in the project's one SPARQL sandbox (``toolkg.store.sparql_sandbox``: a process of its own with no
address, the snapshot read-only, no internet socket, its answers capped), the one `toolkg serve` runs its
queries in. This module is the tool's policy for it: one process, one query at a time (the service holds its
lock around ``run``), started on first use; queries checked first with the default limits
(``toolkg.store.query_guard``: updates, SERVICE, and sizes and nestings that overflow Oxigraph are refused).
An Oxigraph query cannot be interrupted, so one that runs past its time is stopped by stopping the process,
and so is one past its memory limit (``toolkg.memory_guard``): the next query starts a fresh process. Every
failure is one line for the agent (``RequestError``).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from pathlib import Path
from typing import Any

from toolkg.errors import RequestError, StoreError
from toolkg.memory_guard import exceeded
from toolkg.store.query_guard import QueryRefused, check_query
from toolkg.store.sparql_sandbox import Backend

MEMORY_LIMIT_MIB = 1024  # toolkg mcp --sparql-memory
START_TIMEOUT_S = 60.0  # the first query waits for the process to open the snapshot (a cold disk is slow)


class SparqlWorker:
    """The tool's sandboxed process on one snapshot (the service makes a new one when the snapshot changes)."""

    def __init__(self, snapshot: Path, memory_limit_mib: int = MEMORY_LIMIT_MIB) -> None:
        self.snapshot = snapshot
        self.memory_limit_mib = memory_limit_mib
        self._backend: Backend | None = None

    def _started(self) -> Backend:
        if self._backend is None or not self._backend.alive():
            self.close()
            try:  # one query thread: the service asks one query at a time
                self._backend = Backend.start(
                    self.snapshot, memory_limit_mib=self.memory_limit_mib, threads=1, ready_timeout=START_TIMEOUT_S
                )
            except StoreError as exc:
                raise RequestError(f"the SPARQL worker could not start: {exc}") from None
        return self._backend

    def run(self, query: str, timeout: float, max_rows: int) -> dict[str, Any]:
        if not isinstance(query, str) or not query.strip():
            raise RequestError("query must be a non-empty SPARQL string")
        try:  # updates, SERVICE and shapes that overflow Oxigraph's stack never reach it
            check_query(query)  # (the process declares the project's prefixes itself)
        except QueryRefused as exc:
            raise RequestError(str(exc)) from None
        backend = self._started()
        try:
            status, body, _ = backend.ask(query, time.monotonic() + timeout, rows=max_rows)
        except TimeoutError:
            self.close()  # the only way to stop a running Oxigraph query
            raise RequestError(f"query stopped after {timeout:g}s (narrow it, or add a LIMIT)") from None
        except (OSError, ValueError) as exc:  # BackendError included: the process died on this query, or hung up
            with contextlib.suppress(subprocess.TimeoutExpired):
                backend.process.wait(1)  # its socket closes a moment before it can be reaped
            died, out_of_memory = not backend.alive(), backend.out_of_memory()
            self.close()
            if out_of_memory:
                raise RequestError(exceeded(self.memory_limit_mib) + " (the SPARQL worker was restarted)") from None
            if died:
                raise RequestError("the query ended the SPARQL worker (it was restarted)") from None
            raise RequestError(f"the SPARQL worker failed on this query ({exc}); it was restarted") from None
        if status != 200:
            raise RequestError(body.decode("utf-8", "replace"))
        return json.loads(body)

    def close(self) -> None:
        backend, self._backend = self._backend, None
        if backend is not None:
            backend.stop(grace=0)
