"""Reading a SPARQL 1.1 protocol request strictly: what the endpoint accepts and the 4xx it answers otherwise.

The proxy takes the query out of the request (GET ``?query=``, a form POST, or a ``application/sparql-query``
body), checks it, and forwards it to Oxigraph as a form POST it built itself, so nothing malformed or
unexpected from the client (a lying Content-Length, a chunked body, bytes that are not UTF-8, an ``update``
smuggled into a form) ever reaches the backend.

>>> parse_request("GET", "query=ASK%7B%7D&default-graph-uri=urn%3Ag", {}, b"")
SparqlRequest(query='ASK{}', graphs=[('default-graph-uri', 'urn:g')])
>>> parse_request("POST", "", {"content-type": "application/sparql-query"}, "SELECT * {}".encode())
SparqlRequest(query='SELECT * {}', graphs=[])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qsl

MAX_BODY_BYTES = 1024 * 1024  # a form-encoded query at the guard's 64 KiB limit is at most ~3x that
GRAPH_PARAMS = ("default-graph-uri", "named-graph-uri")
READ_ONLY = "toolkg serve is a read-only endpoint: SPARQL updates and Graph Store writes are refused"


class BadRequest(Exception):
    """A request the endpoint answers with ``status`` and a one-line ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class SparqlRequest:
    query: str
    graphs: list[tuple[str, str]] = field(default_factory=list)


def read_body(headers, rfile) -> bytes:
    """The request body as its Content-Length says, or ``BadRequest``; never reads past it or waits forever
    (the caller's socket has a timeout)."""
    if headers.get("Transfer-Encoding"):
        raise BadRequest(411, "send the body with a Content-Length (chunked request bodies are not accepted)")
    raw = headers.get("Content-Length")
    if raw is None:
        return b""
    if not raw.strip().isdigit():
        raise BadRequest(400, f"bad Content-Length: {raw[:40]!r}")
    length = int(raw)
    if length > MAX_BODY_BYTES:
        raise BadRequest(413, f"request body too large: {length:,} bytes (at most {MAX_BODY_BYTES:,})")
    try:
        body = rfile.read(length)
    except TimeoutError:
        raise BadRequest(408, "timed out reading the request body (shorter than its Content-Length?)") from None
    if len(body) < length:
        raise BadRequest(400, f"request body ended after {len(body):,} of {length:,} bytes")
    return body


def _form(text: bytes | str, where: str) -> list[tuple[str, str]]:
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        return parse_qsl(text, keep_blank_values=True, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise BadRequest(400, f"the {where} is not UTF-8 form data") from None


def parse_request(method: str, url_query: str, headers, body: bytes) -> SparqlRequest:
    """The query and graph parameters of a SPARQL query request (``headers`` keys in any case)."""
    params = _form(url_query, "URL query string")
    content_type = (headers.get("content-type") or headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if method == "POST":
        if content_type == "application/sparql-update":
            raise BadRequest(403, READ_ONLY)
        if content_type == "application/x-www-form-urlencoded":
            params += _form(body, "request body")
        elif content_type == "application/sparql-query":
            try:
                params.append(("query", body.decode("utf-8")))
            except UnicodeDecodeError:
                raise BadRequest(400, "the query is not UTF-8") from None
        else:
            raise BadRequest(
                415,
                f"unsupported Content-Type {content_type or '(none)'!r}: send application/sparql-query or "
                "application/x-www-form-urlencoded",
            )
    if any(key == "update" for key, _ in params):
        raise BadRequest(403, READ_ONLY)
    queries = [value for key, value in params if key == "query"]
    if len(queries) != 1:
        raise BadRequest(400, "no query given (?query=...)" if not queries else "more than one query given")
    if not queries[0].strip():
        raise BadRequest(400, "the query is empty")
    return SparqlRequest(queries[0], [(key, value) for key, value in params if key in GRAPH_PARAMS])
