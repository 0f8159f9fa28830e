"""The bookkeeping behind `toolkg mcp --transport http`'s slow-client limits (toolkg.toolsearch.uvicorn_limits)
and the gate's body reading, without a server: which connections are cut, and in which order. The e2e tests
(tests/e2e/test_mcp_slow_clients.py) attack the real CLI."""

from __future__ import annotations

from typing import Any

import anyio

from toolkg import netpolicy
from toolkg.toolsearch import uvicorn_limits
from toolkg.toolsearch.http_gate import _buffered
from toolkg.toolsearch.uvicorn_limits import Waiting


class Conn:
    """A stand-in for a connection: its address, and why it was cut (None while it is not)."""

    def __init__(self, waiting: Waiting, address: str, name: str) -> None:
        self.waiting, self.address, self.name = waiting, address, name
        self.reason: str | None = None

    def cut(self, reason: str) -> None:
        self.reason = reason
        self.waiting.discard(self)  # type: ignore[arg-type]  # a stand-in connection

    def __repr__(self) -> str:
        return self.name


def _open(waiting: Waiting, address: str, count: int, prefix: str) -> list[Conn]:
    conns = [Conn(waiting, address, f"{prefix}{i}") for i in range(count)]
    for conn in conns:
        waiting.add(conn)  # type: ignore[arg-type]  # a stand-in connection
    return conns


def test_an_address_past_its_slow_connections_loses_its_oldest_and_no_other_address_does() -> None:
    waiting = Waiting(cap=1000)
    other = _open(waiting, "10.0.0.2", 3, "o")
    mine = _open(waiting, "10.0.0.1", netpolicy.MAX_SLOW_PER_CLIENT + 5, "m")
    waiting.add(mine[2])  # type: ignore[arg-type]  # its wait started again (an answer went out): now the newest
    waiting.slow(mine[-1])  # type: ignore[arg-type]  # it has waited SLOW_AFTER_S, and so has every one waiting since before it: 12
    cut = [conn for conn in mine if conn.reason]
    assert cut == [mine[0], mine[1], mine[3], mine[4]], cut
    assert "slow connections from 10.0.0.1" in (cut[0].reason or "")
    assert not any(conn.reason for conn in other)
    waiting.slow(mine[2])  # type: ignore[arg-type]  # the newest: every one of the address counts, 9 of them
    assert [conn for conn in mine if conn.reason] == [*cut, mine[5]]
    waiting.slow(mine[5])  # type: ignore[arg-type]  # cut already: nothing to do
    assert sum(1 for conn in mine if conn.reason) == 5


def test_past_the_cap_the_oldest_waiting_connection_makes_room() -> None:
    waiting = Waiting(cap=4)
    conns = _open(waiting, "10.0.0.1", 3, "a") + _open(waiting, "10.0.0.2", 3, "b")
    assert [conn for conn in conns if conn.reason] == conns[:2]
    assert list(waiting.connections) == conns[2:]
    waiting.discard(conns[5])  # type: ignore[arg-type]  # a stand-in connection
    assert list(waiting.by_client) == ["10.0.0.1", "10.0.0.2"] and len(waiting.by_client["10.0.0.2"]) == 2


def test_out_of_descriptors_cuts_the_oldest_at_most_every_half_second(capsys) -> None:
    waiting = Waiting(cap=1000)
    conns = _open(waiting, "10.0.0.1", uvicorn_limits.CUT_WHEN_OUT_OF_FDS + 4, "c")
    for _ in range(3):  # asyncio reports the shortage once for every connection left in the backlog
        waiting.out_of_descriptors(now=100.0)
    assert [conn for conn in conns if conn.reason] == conns[: uvicorn_limits.CUT_WHEN_OUT_OF_FDS]
    waiting.out_of_descriptors(now=100.6)
    assert all(conn.reason for conn in conns)
    assert capsys.readouterr().err.count("out of file descriptors") == 2


def test_the_limits_follow_a_low_file_descriptor_limit(monkeypatch) -> None:
    for soft, waiting, concurrency in ((256, 128, 192), (64, 32, 48), (20000, 512, 1024), (None, 512, 1024)):
        monkeypatch.setattr(netpolicy, "fd_limit", lambda soft=soft: soft)
        monkeypatch.setattr(uvicorn_limits, "fd_limit", lambda soft=soft: soft)
        assert (netpolicy.waiting_cap(), uvicorn_limits.concurrency_limit()) == (waiting, concurrency), soft
        # a flood of waiting connections leaves room under limit_concurrency for normal requests
        assert uvicorn_limits.concurrency_limit() > netpolicy.waiting_cap()


def test_a_body_the_client_abandons_is_not_passed_on() -> None:
    async def read(messages: list[dict]):
        async def receive():
            return messages.pop(0) if messages else {"type": "http.disconnect"}

        return await _buffered(receive)

    part: dict[str, Any] = {"type": "http.request", "body": b'{"jsonrpc": "2.0", ', "more_body": True}
    assert anyio.run(read, [part, {"type": "http.disconnect"}]) is None
    assert anyio.run(read, [dict(part)]) is None  # the disconnect after it, from the stand-in's receive
    body, _ = anyio.run(read, [{**part, "more_body": False}])
    assert body == part["body"]
