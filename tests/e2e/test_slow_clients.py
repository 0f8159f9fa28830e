"""`toolkg serve` under slow clients (issue 40, hole 5): connections that drip a request never starve it.

33 connections sending one header line every 5 s used to hold every worker thread, and a normal client timed
out after 20 s; a per-read timeout never cut them, since each line reset it. Here 40 such connections (half
dripping header lines, half a body) are open while a normal client asks, and each must be cut by the server."""

from __future__ import annotations

import select
import socket
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import CASES
from tests.support.endpoint_helpers import serve_process

SLOW_CONNECTIONS = 40
DRIP_EVERY_S = 1.5
DEADLINE_S = 10.0  # the documented whole-request deadline (toolkg.netpolicy.REQUEST_DEADLINE_S)
SLOW_PER_CLIENT = 8  # the documented cap on one address's slow connections (MAX_SLOW_PER_CLIENT)
COUNT_TOOLS = "SELECT (COUNT(DISTINCT ?t) AS ?n) WHERE { ?t a tk:Tool }"


@pytest.fixture(scope="module")
def store(built_store):
    return built_store(CASES / "inference" / "shop.json", links=False)


def _slow_connection(port: int, kind: str, give_up_at: float) -> float | None:
    """Open a connection and drip a request into it: a header line (``headers``) or a body byte (``body``) every
    DRIP_EVERY_S. Seconds from opening until the server closed it (or answered), None if it never did."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        opened = time.monotonic()
        if kind == "headers":
            conn.sendall(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            drip = b"X-Slow: 1\r\n"
        else:
            conn.sendall(
                b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/sparql-query\r\n"
                b"Content-Length: 1000\r\n\r\nASK"
            )
            drip = b" "
        while time.monotonic() < give_up_at:
            readable, _, _ = select.select([conn], [], [], DRIP_EVERY_S)
            if readable:  # a 408, or the end of the stream: either way the server let go of it
                return time.monotonic() - opened
            try:
                conn.sendall(drip)
            except OSError:
                return time.monotonic() - opened
    return None


def _query(base: str, timeout: float) -> tuple[float, str]:
    """Seconds a normal client waited for a query's answer, and the answer (or why there was none)."""
    data = urllib.parse.urlencode({"query": COUNT_TOOLS}).encode()
    started = time.monotonic()
    try:
        with urllib.request.urlopen(base + "/query", data=data, timeout=timeout) as response:
            return time.monotonic() - started, response.read().decode()
    except OSError as exc:
        return time.monotonic() - started, f"no answer: {exc}"


def test_slow_clients_do_not_starve_the_endpoint_and_are_cut(store):
    with serve_process(store) as (base, process):
        port = int(base.rsplit(":", 1)[1])
        give_up_at = time.monotonic() + DEADLINE_S + 6
        with ThreadPoolExecutor(SLOW_CONNECTIONS) as pool:
            slow = [
                pool.submit(_slow_connection, port, "headers" if i % 2 else "body", give_up_at)
                for i in range(SLOW_CONNECTIONS)
            ]
            time.sleep(2 * DRIP_EVERY_S)  # every slow connection open and dripping
            waited, answer = _query(base, timeout=8)
            assert waited < 5 and '"20"' in answer, (waited, answer)
            lasted = [future.result() for future in slow]
        assert all(seconds is not None and seconds < DEADLINE_S + 2 * DRIP_EVERY_S for seconds in lasted), lasted
        ended = [seconds for seconds in lasted if seconds is not None]  # all of them, as just asserted
        # One address may keep a few slow connections; the rest are cut as soon as they count as slow.
        cut_early = sum(1 for seconds in ended if seconds < 2 + 2 * DRIP_EVERY_S)
        assert cut_early >= SLOW_CONNECTIONS - SLOW_PER_CLIENT, sorted(ended)
        assert _query(base, timeout=8)[1].count('"20"') == 1
        assert process.poll() is None
    from toolkg import netpolicy

    assert (netpolicy.REQUEST_DEADLINE_S, netpolicy.MAX_SLOW_PER_CLIENT) == (DEADLINE_S, SLOW_PER_CLIENT)
