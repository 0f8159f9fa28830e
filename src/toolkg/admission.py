"""Which connections an HTTP server cuts while they wait for their request: the one bookkeeping of ``toolkg
serve`` (``toolkg.serve.http_server``, a selector loop) and ``toolkg mcp --transport http``
(``toolkg.toolsearch.uvicorn_limits``, uvicorn). The rules and numbers are ``toolkg.netpolicy``'s; this is
where they are applied, so a server only says when a connection starts and stops waiting, calls ``sweep``
every ``SWEEP_EVERY_S``, and knows how to cut one of its connections.

A connection waits from the moment it opens (or its previous answer went out) until its request is whole,
body included. ``Waiting`` keeps those connections oldest first, overall and per client address (dicts keep
insertion order, and a connection is removed and added again each time its wait starts, so the first entries
are always the ones that have waited longest), and cuts:

- every connection past ``netpolicy.REQUEST_DEADLINE_S``;
- of one address's connections that have waited over ``netpolicy.SLOW_AFTER_S``, all but the newest
  ``netpolicy.MAX_SLOW_PER_CLIENT`` (``netpolicy.beyond_slow_cap``);
- the oldest, when a new one would make more than ``cap`` (``netpolicy.waiting_cap()``) wait;
- the oldest ``CUT_WHEN_OUT_OF_FDS``, when ``accept`` runs out of descriptors (at most every half second).

The numbers are read from ``netpolicy`` when they are used, not copied at import, so the two servers cannot
drift apart (tests/integration/test_shared_admission.py changes one there and watches both servers follow).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Hashable
from itertools import takewhile
from typing import Generic, Protocol, TypeVar

from toolkg import netpolicy

SWEEP_EVERY_S = 0.2  # how often a server sweeps: the deadline and the slow cap are kept to within this
CUT_WHEN_OUT_OF_FDS = 16  # waiting connections closed each time accept runs out of descriptors
_FD_CUT_EVERY_S = 0.5  # a shortage is reported for each connection in the backlog: one cut answers them all


class Connection(Hashable, Protocol):
    """What ``Waiting`` needs of a server's connection: its client's address, and a way to cut it.

    ``cut`` closes the connection: with 408 and ``reason`` when the client had sent part of a request that has
    no answer, without a word otherwise (it sent nothing since the last answer)."""

    @property
    def address(self) -> str: ...

    def cut(self, reason: str) -> None: ...


C = TypeVar("C", bound=Connection)


class Waiting(Generic[C]):
    """The connections of one server still without a whole request, oldest first (module doc). ``who`` names
    the server in what it says on stderr."""

    def __init__(self, cap: int | None = None, who: str = "toolkg") -> None:
        self.cap = netpolicy.waiting_cap() if cap is None else cap
        self.who = who
        self.connections: dict[C, float] = {}  # -> when its wait started (time.monotonic)
        self.by_client: dict[str, dict[C, None]] = {}
        self._last_fd_cut = float("-inf")

    def add(self, conn: C, now: float | None = None) -> None:
        """``conn``'s wait starts (again) now; past the cap, the oldest waiting connections are cut."""
        self.discard(conn)
        self.connections[conn] = time.monotonic() if now is None else now
        self.by_client.setdefault(conn.address, {})[conn] = None
        excess = len(self.connections) - self.cap
        if excess > 0:
            self._cut(list(self.connections)[:excess], f"more than {self.cap} connections waiting for their request")

    def discard(self, conn: C) -> None:
        """``conn`` waits no longer: its request is whole, or it is closed."""
        self.connections.pop(conn, None)
        group = self.by_client.get(conn.address)
        if group is not None:
            group.pop(conn, None)
            if not group:
                del self.by_client[conn.address]

    def sweep(self, now: float | None = None) -> None:
        """Cut the connections past the deadline, then each address's slow connections past its cap."""
        now = time.monotonic() if now is None else now
        newest_slow: dict[str, C] = {}  # per address, its newest connection that has waited over SLOW_AFTER_S
        for conn, since in list(self.connections.items()):
            waited = now - since
            if waited > netpolicy.REQUEST_DEADLINE_S:
                self._cut([conn], netpolicy.DEADLINE_PASSED)
            elif waited > netpolicy.SLOW_AFTER_S:
                newest_slow[conn.address] = conn
            else:
                break  # oldest first: every one after it has waited less
        for conn in newest_slow.values():
            self.slow(conn)

    def slow(self, conn: C) -> None:
        """``conn`` has waited ``SLOW_AFTER_S``, and so has every connection of its address that waits since
        before it: past ``MAX_SLOW_PER_CLIENT`` of those, the oldest are cut."""
        group = self.by_client.get(conn.address, {})
        if conn not in group:  # its request became whole, or it was cut, in the meantime
            return
        slow = [*takewhile(lambda other: other is not conn, group), conn]
        self._cut(netpolicy.beyond_slow_cap(slow), netpolicy.too_many_slow(conn.address))

    def out_of_descriptors(self, now: float | None = None) -> int:
        """``accept`` failed for want of a descriptor: close the oldest waiting connections, at most once per
        half second (asyncio reports the shortage again for every connection left in the backlog); how many."""
        now = time.monotonic() if now is None else now
        if now - self._last_fd_cut < _FD_CUT_EVERY_S:
            return 0
        self._last_fd_cut = now
        cut = list(self.connections)[:CUT_WHEN_OUT_OF_FDS]
        self._cut(cut, "out of file descriptors")
        print(
            f"{self.who}: out of file descriptors (limit {netpolicy.fd_limit()}): closed {len(cut)} connection(s) "
            "still waiting for their request",
            file=sys.stderr,
        )
        return len(cut)

    def _cut(self, conns: list[C], reason: str) -> None:
        for conn in conns:
            self.discard(conn)  # first: a server's cut need not remember to
            conn.cut(reason)
