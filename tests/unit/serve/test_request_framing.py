"""When the endpoint's reading thread has a whole request to hand to a worker, and which answer format the
SPARQL backend picks for an Accept header (as Oxigraph's own server picks it)."""

from __future__ import annotations

import pytest

from toolkg.serve.http_server import head_end, header_fields, request_end
from toolkg.serve.sparql_protocol import MAX_BODY_BYTES
from toolkg.store.sparql_sandbox_worker import negotiate


def _whole(data: bytes) -> int | None:
    """Where the first request in ``data`` ends, once all of it is in; None while more must come."""
    head = head_end(data)
    if head is None:
        return None
    end = request_end(head, header_fields(data[:head]))
    return end if end <= len(data) else None


@pytest.mark.parametrize(
    "partial",
    [
        b"GET /status HTTP/1.1\r\nHost: a\r\n",  # headers still coming
        b"GET /status HTTP/1.1",
        b"POST /q HTTP/1.1\r\nContent-Length: 5\r\n\r\nabc",  # the body still coming
        b"POST /q HTTP/1.1\r\ncontent-length: 5\r\n\r\n",
    ],
)
def test_a_request_is_not_whole_before_its_headers_and_announced_body_are_in(partial):
    assert _whole(partial) is None


@pytest.mark.parametrize(
    ("whole", "after"),
    [
        (b"GET /status HTTP/1.1\r\nHost: a\r\n\r\n", b""),
        (b"GET /status HTTP/1.1\nHost: a\n\n", b""),  # bare line feeds, as the standard library reads them
        (b"GET /\r\n", b"Host: a\r\n"),  # no version: nothing of the request follows its line
        (b"GARBAGE\r\n", b"\r\n"),  # not a request line: the handler answers 400 to the line
        (b"POST /q HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcde", b"GET / HTTP/1.1\r\n"),  # the next request
        # Framing the handler refuses without reading a body: whole at the end of the headers.
        (b"POST /q HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", b"6\r\n"),
        (b"POST /q HTTP/1.1\r\nContent-Length: -5\r\n\r\n", b"abc"),
        (b"POST /q HTTP/1.1\r\nContent-Length: abc\r\n\r\n", b"abc"),
        (b"POST /q HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY_BYTES + 1), b"abc"),
        # The first Content-Length counts, as the handler reads it.
        (b"POST /q HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 9\r\n\r\nab", b"cdefghi"),
    ],
)
def test_a_request_is_whole_once_its_headers_and_announced_body_are_in(whole, after):
    assert _whole(whole + after) == len(whole)


def _formats(accept: str):
    by_type = {"application/sparql-results+json": "json", "text/csv": "csv", "application/json": "json"}
    return negotiate(accept, by_type.get, "json", {"application": "json", "text": "json"}, "json or csv")


@pytest.mark.parametrize(
    ("accept", "chosen"),
    [
        ("", "json"),
        ("text/csv", "csv"),
        ("text/csv;q=0.5, application/json", "json"),
        ("application/json;q=0.2, text/csv;q=0.9", "csv"),
        ("text/html, */*;q=0.8", "json"),
        ("text/*", "json"),
        ("image/png, text/csv;q=0.1", "csv"),
    ],
)
def test_accept_picks_the_highest_weighted_known_format(accept, chosen):
    assert _formats(accept) == (chosen, None)


def test_accept_without_a_known_format_is_406_and_a_bad_one_400():
    assert _formats("image/png")[1][0] == 406
    assert _formats("text/csv;q=high")[1][0] == 400
    assert _formats("nonsense")[1][0] == 400
