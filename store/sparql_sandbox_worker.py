"""The SPARQL sandbox's process (``toolkg.store.sparql_sandbox``): pyoxigraph over one snapshot, reachable by its
parent only. It answers `toolkg serve`'s queries (a SPARQL results format) and `toolkg mcp`'s ``sparql`` tool
(``rows_answer``: JSON rows, at most as many as asked).

Why a process of its own (as when it was ``oxigraph serve-read-only``): a query that overflows its stack ends
this process, not the endpoint, and a query that runs away can be stopped, by killing the process (pyoxigraph has
no timeout and no way to cancel a query from another thread).

Why it listens on nothing: an HTTP server on a loopback port is reachable by anything that finds the port
(``/proc/net/tcp`` lists it, ``ps`` shows ``--bind``), around the endpoint's checks: any ``Host`` (a web page by
DNS rebinding), any query shape, ``SERVICE`` towards any local port. Here the parent keeps the other end of a
Unix socket pair this process inherits, and hands over one end of a fresh socket pair per query on it
(``SCM_RIGHTS``); nobody else holds an end, and there is no address to find.

Defence in depth, should a query reach this process unchecked: ``SERVICE`` is refused here too unless the
endpoint allows federation, and on Linux (x86-64, arm64) the process cannot open an internet socket at all
(a seccomp filter installed before the store opens), so a ``SERVICE`` the lexer missed reaches nothing.

Memory: ``--memory-limit-mib`` bounds what queries may allocate beyond what the process holds once its query
threads exist (``toolkg.memory_guard.limit_data``, ``RLIMIT_DATA``). A query past it ends the process (Rust's
allocator aborts, printing ``memory allocation of N bytes failed``) or, if Python's allocation is the one
refused, gets 507 here; the parent tells the first from a crash by that line and restarts the process.

One query per socket: the parent writes a JSON object (``query``, ``graphs``, ``accept``, ``base``, and ``rows``
for the MCP tool) and closes its writing side; the answer is one JSON line (``status``, ``content_type``) and
then the body.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from toolkg.memory_guard import exceeded, limit_data

MAX_REQUEST_BYTES = 4 * 1024 * 1024  # the endpoint sends at most a 1 MiB body's query; anything bigger is not it
REQUEST_READ_TIMEOUT_S = 10.0  # the parent writes a request at once; a socket that stays silent is dropped


class ResultTooLarge(Exception):
    pass


class CappedBuffer:
    """A binary writer for pyoxigraph's serializers that refuses to grow past ``limit`` bytes, so a query that
    streams rows forever stops at the cap instead of filling memory until the timeout."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[bytes] = []
        self.size = 0

    def write(self, data) -> int:
        self.size += len(data)
        if self.size > self.limit:
            raise ResultTooLarge
        self.parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def getvalue(self) -> bytes:
        return b"".join(self.parts)


def negotiate(accept: str, parse, default, by_base: dict[str, object], example: str):
    """The format an ``Accept`` header asks for, as Oxigraph's server chooses it (the highest ``q`` wins, the
    first on a tie; ``*/*`` is the default, ``text/*`` and ``application/*`` the default of their kind).
    Returns ``(format, None)`` or ``(None, (status, message))``."""
    if not accept.strip():
        return default, None
    chosen, chosen_score = None, 0.0
    for item in accept.split(","):
        media_type, score = item, 1.0
        head, sep, last = item.rpartition(";")
        if sep and last.split("=", 1)[0].strip().lower() == "q" and "=" in last:
            try:
                score = float(last.split("=", 1)[1].strip())
            except ValueError:
                return None, (400, f"Invalid Accept media type score: {last.split('=', 1)[1].strip()}")
            media_type = head
        if score <= chosen_score:
            continue
        base, slash, sub = media_type.split(";", 1)[0].partition("/")
        if not slash:
            return None, (400, f"Invalid media type: '{media_type.strip()}'")
        base, sub = base.strip().lower(), sub.strip().lower()
        if base == "*" and sub == "*":
            found = default
        elif sub == "*":
            found = by_base.get(base)
        else:
            found = parse(media_type.strip())
        if found is not None:
            chosen, chosen_score = found, score
    if chosen is None:
        return None, (406, f"The accept header does not provide any accepted format like {example}")
    return chosen, None


MEMORY_EXCEEDED_STATUS = 507  # Insufficient Storage: the server cannot hold what answering needs
XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"


def _term(term) -> dict[str, str]:
    from pyoxigraph import BlankNode, Literal, NamedNode

    if isinstance(term, NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, Literal):
        out = {"type": "literal", "value": term.value}
        if term.language:
            out["xml:lang"] = term.language
        elif term.datatype.value != XSD_STRING:
            out["datatype"] = term.datatype.value
        return out
    return {"type": "triple", "value": str(term)}


def rows_answer(results, max_rows: int) -> dict:
    """The MCP tool's answer, SPARQL-JSON-like values: SELECT rows, ASK's boolean or a graph's triples, at most
    ``max_rows`` of them (``truncated`` says when there were more): the rows stop being read at the cap."""
    from pyoxigraph import QueryBoolean, QuerySolutions

    if isinstance(results, QueryBoolean):
        return {"type": "ask", "boolean": bool(results)}
    rows: list = []  # SELECT: dicts of variable -> term; a graph: [subject, predicate, object] lists
    truncated = False
    if isinstance(results, QuerySolutions):
        names = [v.value for v in results.variables]
        for solution in results:
            if len(rows) == max_rows:
                truncated = True
                break
            rows.append({n: _term(solution[n]) for n in names if solution[n] is not None})
        return {"type": "select", "variables": names, "rows": rows, "truncated": truncated}
    for triple in results:
        if len(rows) == max_rows:
            truncated = True
            break
        rows.append([_term(triple.subject), _term(triple.predicate), _term(triple.object)])
    return {"type": "graph", "triples": rows, "truncated": truncated}


def _too_large(max_result_bytes: int) -> tuple[int, str, bytes]:
    return 413, "text/plain", f"result larger than {max_result_bytes // 2**20} MiB: add a LIMIT".encode()


def _rows(results, max_rows: int, max_result_bytes: int) -> tuple[int, str, bytes]:
    """``rows_answer`` as a response; an evaluation error met while reading rows is one line, as the MCP tool
    has always said it (the exception's type and message)."""
    try:
        body = json.dumps(rows_answer(results, max_rows), ensure_ascii=False).encode()
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - the message goes back to the caller as one line
        return 500, "text/plain; charset=utf-8", f"{type(exc).__name__}: {exc}".encode()
    if len(body) > max_result_bytes:
        return _too_large(max_result_bytes)
    return 200, "application/json", body


def run_query(store, request: dict, allow_service: bool, max_result_bytes: int) -> tuple[int, str, bytes]:
    """(status, content type, body) for one request; every failure is a status and a one-line message."""
    from pyoxigraph import NamedNode, QueryResultsFormat, QueryTriples, RdfFormat

    from toolkg.ontology import PREFIXES
    from toolkg.store.query_guard import QueryLimits, QueryRefused, check_query, syntax_error_line

    query = request["query"]
    if not allow_service:
        # The endpoint checked this query already; checked again here so that no path to this process (a
        # route added later, a caller other than the endpoint) can skip the federation rule. Only federation:
        # the size and shape limits are the endpoint's, set by its options.
        try:
            check_query(query, QueryLimits(max_bytes=2**31, max_depth=2**31, max_complexity=2**31))
        except QueryRefused as federation:
            if federation.status == 403:
                return 403, "text/plain; charset=utf-8", str(federation).encode()
    graphs = request.get("graphs") or []
    default_graphs = [NamedNode(v) for k, v in graphs if k == "default-graph-uri"] if graphs else None
    named_graphs = [NamedNode(v) for k, v in graphs if k == "named-graph-uri"] if graphs else None
    try:
        results = store.query(
            query,
            base_iri=request.get("base"),
            use_default_graph_as_union=not graphs,  # the union of all graphs unless the request names some
            default_graph=default_graphs,
            named_graphs=named_graphs,
            prefixes=PREFIXES,  # beside the text, not in front of it: error positions are the query's own
        )
    except SyntaxError as exc:
        return 400, "text/plain; charset=utf-8", syntax_error_line(exc, query).encode()
    except ValueError as exc:
        return 400, "text/plain; charset=utf-8", str(exc).encode()
    if request.get("rows") is not None:
        return _rows(results, int(request["rows"]), max_result_bytes)
    accept = request.get("accept") or ""
    if isinstance(results, QueryTriples):
        fmt, refused = negotiate(
            accept,
            RdfFormat.from_media_type,
            RdfFormat.N_QUADS,
            {"application": RdfFormat.N_QUADS, "text": RdfFormat.N_QUADS},
            "application/n-quads or text/turtle",
        )
    else:
        fmt, refused = negotiate(
            accept,
            QueryResultsFormat.from_media_type,
            QueryResultsFormat.JSON,
            {"application": QueryResultsFormat.JSON, "text": QueryResultsFormat.JSON},
            "application/sparql-results+json or text/tsv",
        )
    if refused:
        return refused[0], "text/plain; charset=utf-8", refused[1].encode()
    buffer = CappedBuffer(max_result_bytes)
    try:
        results.serialize(buffer, format=fmt)
    except ResultTooLarge:
        return _too_large(max_result_bytes)
    except Exception as exc:  # an evaluation error met while streaming (pyoxigraph raises it from serialize)
        if buffer.size > max_result_bytes:
            return _too_large(max_result_bytes)
        return 500, "text/plain; charset=utf-8", str(exc).encode()
    return 200, fmt.media_type, buffer.getvalue()


def _read_request(conn: socket.socket) -> dict:
    conn.settimeout(REQUEST_READ_TIMEOUT_S)
    chunks, size = [], 0
    while chunk := conn.recv(65536):
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            raise ValueError("request too large")
        chunks.append(chunk)
    return json.loads(b"".join(chunks))


def answer(store, conn: socket.socket, allow_service: bool, max_result_bytes: int, memory_limit_mib: int = 0) -> None:
    with conn:
        try:
            request = _read_request(conn)
            status, content_type, body = run_query(store, request, allow_service, max_result_bytes)
        except MemoryError:  # Python's allocation refused at the limit (Rust's aborts the process instead)
            status, content_type = MEMORY_EXCEEDED_STATUS, "text/plain; charset=utf-8"
            body = exceeded(memory_limit_mib).encode()
        except Exception as exc:  # a malformed request from the parent, or anything unforeseen: said, not raised
            status, content_type, body = 500, "text/plain; charset=utf-8", f"SPARQL backend error: {exc}".encode()
        head = json.dumps({"status": status, "content_type": content_type}).encode() + b"\n"
        try:
            conn.settimeout(None)  # the parent reads against its own deadline and closes when it gives up
            conn.sendall(head + body)
        except OSError:  # the parent gave up on this query (its deadline) and closed its end
            pass


# -- no internet sockets ----------------------------------------------------------------------------------------

# socket(2)'s number and the seccomp audit architecture, per machine; other machines go without the filter.
_SOCKET_SYSCALL = {"x86_64": (41, 0xC000003E), "aarch64": (198, 0xC00000B7)}


def forbid_internet_sockets() -> bool:
    """Make ``socket(AF_INET | AF_INET6, ...)`` fail with EPERM in this process from now on (every thread,
    every child); Unix sockets still work. True when the filter is in place (Linux on x86-64 or arm64)."""
    import ctypes
    import platform
    import struct

    machine = platform.machine()
    if sys.platform != "linux" or machine not in _SOCKET_SYSCALL:
        return False
    nr_socket, audit_arch = _SOCKET_SYSCALL[machine]
    ld_abs, jeq, ret = 0x20, 0x15, 0x06  # BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K
    allow, deny = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
    # seccomp_data: nr at 0, arch at 4, args[0] (low half, little-endian) at 16.
    program = [
        (ld_abs, 0, 0, 4),
        (jeq, 0, 6, audit_arch),  # another ABI: allow (this process only ever uses the native one)
        (ld_abs, 0, 0, 0),
        (jeq, 0, 4, nr_socket),
        (ld_abs, 0, 0, 16),
        (jeq, 1, 0, socket.AF_INET),
        (jeq, 0, 1, socket.AF_INET6),
        (ret, 0, 0, deny),
        (ret, 0, 0, allow),
    ]
    filters = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *op) for op in program))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(program), ctypes.addressof(filters))
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        return False
    return libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(fprog), 0, 0) == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the SPARQL sandbox's process (toolkg serve and toolkg mcp start it)")
    parser.add_argument("--snapshot", required=True)
    parser.add_argument("--control-fd", type=int, required=True)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--max-result-bytes", type=int, required=True)
    parser.add_argument("--allow-service", action="store_true")
    parser.add_argument("--memory-limit-mib", type=int, default=0, help="0: no limit")
    args = parser.parse_args(argv)

    control = socket.socket(fileno=args.control_fd)
    if not args.allow_service and not forbid_internet_sockets():
        print(
            "toolkg SPARQL sandbox: no seccomp filter on this machine; SERVICE is refused by the guard only",
            file=sys.stderr,
            flush=True,
        )
    from pyoxigraph import Store

    from toolkg.store.query_guard import LARGE_STACK_BYTES

    # The threads that run queries get the stack `toolkg query` runs them on: the guard's limits keep queries
    # far from overflowing it (a query that still did would end this process, which the parent replaces).
    threading.stack_size(LARGE_STACK_BYTES)
    store = Store.read_only(args.snapshot)
    pool = ThreadPoolExecutor(args.threads, thread_name_prefix="sparql")
    if args.memory_limit_mib:
        # Every query thread first, each with its stack mapped: the limit is on what queries add (module doc).
        started = threading.Barrier(args.threads + 1)
        for _ in range(args.threads):
            pool.submit(started.wait)
        started.wait()
        if not limit_data(args.memory_limit_mib * 2**20):
            print("toolkg SPARQL sandbox: RLIMIT_DATA not set; the memory watchdog only", file=sys.stderr, flush=True)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 1, 1)
        except InterruptedError:
            continue
        except OSError:
            break
        if not message and not fds:  # the parent is gone
            break
        for fd in fds:
            conn = socket.socket(fileno=fd)
            pool.submit(answer, store, conn, args.allow_service, args.max_result_bytes, args.memory_limit_mib)
    os._exit(0)  # not pool.shutdown(): a runaway query must not keep this process alive


if __name__ == "__main__":
    sys.exit(main())
