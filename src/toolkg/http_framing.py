"""Where an HTTP/1.1 request ends, read strictly, for ``toolkg serve``'s server and ``toolkg mcp --transport
http``'s (uvicorn): a request whose end two readers could place differently is refused, and its connection closed.

Request smuggling: where two readers may disagree on where a request ends, the bytes after it are another
request to one and a body to the other. An attack battery found ``Content-Length: 0, 5``, two Content-Length
headers, one with Transfer-Encoding (RFC 9112 6.1, 6.3), a folded or space-padded header name
(``Content-Length : 5``) each gave the body's bytes to the next request: two answers on one connection, the
second to a request hidden in the first. Only the header bytes are looked at, as they are, unnormalised.
"""

from __future__ import annotations

from http import HTTPStatus


def head_end(data: bytes | bytearray) -> int | None:
    """Where the request line and headers end in ``data`` (the body starts there), or None until they do."""
    line_end = data.find(b"\n")
    if line_end < 0:
        return None
    if len(data[:line_end].split()) < 3:  # no HTTP version: an HTTP/0.9-style line, no headers follow
        return line_end + 1
    ends = [i + n for i, n in ((data.find(b"\r\n\r\n"), 4), (data.find(b"\n\n"), 2)) if i >= 0]
    return min(ends) if ends else None


CHUNKED_REFUSED = "send the body with a Content-Length (chunked request bodies are not accepted)"


def framing_refusal(head: bytes | bytearray, *, chunked_allowed: bool = False) -> tuple[HTTPStatus, str] | None:
    """Why the request whose request line and headers are ``head`` must be refused, its connection closed, or
    None: more than one Content-Length, one that is not ASCII digits (Python's ``int`` reads ``²``), one with
    Transfer-Encoding, a folded line or a header name with spaces around it. ``chunked_allowed``: a server
    that reads chunked bodies (uvicorn) takes Transfer-Encoding alone; one that does not (``toolkg serve``)
    answers it 411, since the body it does not read must not be taken for the next request."""
    lengths: list[bytes] = []
    chunked = False
    for line in bytes(head).split(b"\n")[1:]:
        line = line.removesuffix(b"\r")
        if not line:
            continue
        if line[:1] in (b" ", b"\t"):
            return HTTPStatus.BAD_REQUEST, "obsolete line folding in the request headers"
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip(b" \t"):
            return HTTPStatus.BAD_REQUEST, f"malformed header line: {line[:40].decode('latin-1')!r}"
        name = name.lower()
        if name == b"content-length":
            lengths.append(value.strip(b" \t"))
        elif name == b"transfer-encoding":
            chunked = True
    if len(lengths) > 1:
        return HTTPStatus.BAD_REQUEST, "more than one Content-Length header"
    if lengths and not (lengths[0].isdigit() and lengths[0].isascii()):
        return HTTPStatus.BAD_REQUEST, f"bad Content-Length: {lengths[0][:40].decode('latin-1')!r}"
    if chunked and lengths:
        return HTTPStatus.BAD_REQUEST, "both Content-Length and Transfer-Encoding"
    if chunked and not chunked_allowed:
        return HTTPStatus.LENGTH_REQUIRED, CHUNKED_REFUSED
    return None
