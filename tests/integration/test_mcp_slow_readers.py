"""A client that stops reading its answer cannot hold `toolkg mcp --transport http`'s connection (and the answer
it is owed) for ever: uvicorn's send waits for the buffer to drain, and without a bound it waited as long as the
client did. ``toolkg.netpolicy.WRITE_TIMEOUT_S`` bounds it, as it bounds `toolkg serve`'s writes. The server is
``uvicorn_limits.run`` in a process of its own with a stand-in application owed a 64 MiB answer, and the timeout
lowered so that the test takes seconds; the control run, with the timeout far off, shows the stall is real."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time

import pytest

from tests.support.endpoint_helpers import free_port
from tests.support.live_helpers import wait_listening

SERVER = """
import sys, time
from toolkg.toolsearch import uvicorn_limits

uvicorn_limits.WRITE_TIMEOUT_S = float(sys.argv[2])
CHUNKS = 64

async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            await send({"type": message["type"] + ".complete"})
            if message["type"] == "lifespan.shutdown":
                return
    size = str(CHUNKS * 2**20).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", size)]})
    started = time.monotonic()
    for i in range(CHUNKS):  # each send returns once uvicorn's buffer drains, or the client is gone
        await send({"type": "http.response.body", "body": b"x" * 2**20, "more_body": i < CHUNKS - 1})
    print(f"answer done after {time.monotonic() - started:.1f}s", flush=True)

uvicorn_limits.run(app, "127.0.0.1", int(sys.argv[1]))
"""


def _stalled_reader(write_timeout: float, wait_s: float) -> float | None:
    """How long the application took to be done with its answer to a client that asked and then read nothing
    for ``wait_s`` seconds before hanging up (None: never done)."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(port), str(write_timeout)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        wait_listening(port, server)
        client = socket.socket()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the kernel takes little of it for us
        client.connect(("127.0.0.1", port))
        client.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        time.sleep(wait_s)  # reading nothing
        client.close()
    finally:
        server.terminate()
        output, _ = server.communicate(timeout=20)
    done = re.search(r"answer done after ([0-9.]+)s", output)
    return float(done.group(1)) if done else None


@pytest.mark.slow  # several seconds (a real server's write timeout, a store built): make test, not test-fast
def test_a_client_that_reads_nothing_of_its_answer_is_cut_after_the_write_timeout() -> None:
    cut = _stalled_reader(write_timeout=1.0, wait_s=5.0)
    assert cut is not None and cut < 4.0, cut  # the timeout, not the client's hanging up, ended it
    held = _stalled_reader(write_timeout=600.0, wait_s=4.0)  # the control: held until the client hung up
    assert held is None or held >= 3.5, held
