"""``toolkg.admission.Waiting.sweep``, on a clock the test sets: which waiting connections a sweep cuts, and why.
The servers that sweep it are attacked by tests/integration/test_shared_admission.py and the e2e slow-client
tests; add, slow and the descriptor shortage by tests/unit/toolsearch/test_uvicorn_limits.py."""

from __future__ import annotations

from toolkg import netpolicy
from toolkg.admission import Waiting


class Conn:
    def __init__(self, address: str, name: str) -> None:
        self.address, self.name = address, name
        self.reason: str | None = None

    def cut(self, reason: str) -> None:
        assert self.reason is None, f"{self.name} cut twice"
        self.reason = reason

    def __repr__(self) -> str:
        return self.name


def test_a_sweep_cuts_the_connections_past_the_deadline_and_no_other() -> None:
    waiting: Waiting[Conn] = Waiting(cap=100)
    late, due, fresh = Conn("10.0.0.1", "late"), Conn("10.0.0.2", "due"), Conn("10.0.0.3", "fresh")
    waiting.add(late, now=0.0)
    waiting.add(due, now=1.0)
    waiting.add(fresh, now=netpolicy.REQUEST_DEADLINE_S)
    waiting.sweep(now=netpolicy.REQUEST_DEADLINE_S + 1.0)  # "due" has waited the deadline exactly: not past it
    assert (late.reason, due.reason, fresh.reason) == (netpolicy.DEADLINE_PASSED, None, None)
    assert list(waiting.connections) == [due, fresh]
    waiting.add(due, now=netpolicy.REQUEST_DEADLINE_S + 1.0)  # an answer went out: its wait starts again
    waiting.sweep(now=2 * netpolicy.REQUEST_DEADLINE_S + 0.5)
    assert (due.reason, fresh.reason) == (None, netpolicy.DEADLINE_PASSED)


def test_a_sweep_cuts_each_address_s_oldest_slow_connections_past_its_cap() -> None:
    waiting: Waiting[Conn] = Waiting(cap=100)
    extra = 3
    mine = [Conn("10.0.0.1", f"m{i}") for i in range(netpolicy.MAX_SLOW_PER_CLIENT + extra)]
    other = [Conn("10.0.0.2", f"o{i}") for i in range(netpolicy.MAX_SLOW_PER_CLIENT)]
    for i, conn in enumerate(mine + other):
        waiting.add(conn, now=i * 0.01)
    newcomer = Conn("10.0.0.1", "new")
    waiting.add(newcomer, now=5.0)
    waiting.sweep(now=netpolicy.SLOW_AFTER_S + 1.0)  # every one slow but the newcomer, which does not count
    assert [conn for conn in mine if conn.reason] == mine[:extra]
    assert mine[0].reason == netpolicy.too_many_slow("10.0.0.1")
    assert not any(conn.reason for conn in other) and newcomer.reason is None
    waiting.sweep(now=5.0 + netpolicy.SLOW_AFTER_S + 0.5)  # the newcomer is slow too: one more of mine goes
    assert [conn for conn in mine if conn.reason] == mine[: extra + 1] and newcomer.reason is None
