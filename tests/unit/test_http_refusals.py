"""The rules both HTTP servers take from ``toolkg.netpolicy`` (``toolkg serve``'s selector server and ``toolkg mcp
--transport http``'s uvicorn): which of an address's slow connections are cut, and the bytes a refused
connection gets before it is closed. The servers themselves are attacked by tests/e2e/test_slow_clients.py and
tests/e2e/test_mcp_slow_clients.py."""

from __future__ import annotations

from http import HTTPStatus

from toolkg.netpolicy import MAX_SLOW_PER_CLIENT, beyond_slow_cap, closing_answer, head_too_large, too_many_slow


def test_an_address_keeps_its_newest_slow_connections_and_loses_the_rest_oldest_first() -> None:
    assert beyond_slow_cap(list(range(MAX_SLOW_PER_CLIENT))) == []
    assert beyond_slow_cap(list(range(MAX_SLOW_PER_CLIENT + 3))) == [0, 1, 2]
    assert beyond_slow_cap([]) == []
    assert too_many_slow("10.0.0.1") == f"more than {MAX_SLOW_PER_CLIENT} slow connections from 10.0.0.1"


def test_a_refusal_is_one_plain_line_with_its_length_and_closes_the_connection() -> None:
    answer = closing_answer(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, head_too_large(16384))
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 431 Request Header Fields Too Large"
    assert body == b"431 request headers over 16384 bytes\n"
    assert f"Content-Length: {len(body)}" in lines and "Connection: close" in lines
    assert "Content-Type: text/plain; charset=utf-8" in lines


def test_a_server_s_own_headers_go_with_the_refusal() -> None:
    answer = closing_answer(HTTPStatus.REQUEST_TIMEOUT, "slow", {"X-Frame-Options": "DENY"})
    head = answer.partition(b"\r\n\r\n")[0].decode().split("\r\n")
    assert head[0] == "HTTP/1.1 408 Request Timeout" and "X-Frame-Options: DENY" in head
