"""What the shared local Prefect server answers, tried the way an attacker's web page would: over real HTTP on
127.0.0.1, with a foreign Origin (a page on another site, or on another local port), a foreign Host (DNS
rebinding: the page's own name re-pointed at 127.0.0.1), and no key. Only toolkg's own commands get in: their
Host, no Origin or the server's own, and the key toolkg keeps in its config folder (0600)."""

from __future__ import annotations

import base64
import http.client
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_local_server import _env, _servers, _state

pytestmark = pytest.mark.timeout(240)

FILTER = "/api/flow_runs/filter"


@pytest.fixture
def server(tmp_path: Path):
    """A shared server started as a build starts it (``acquire``), by a client that has exited; its port, its
    config folder and its state. Killed afterwards."""
    home, config = tmp_path / "prefect-home", tmp_path / "config"
    home.mkdir()
    env = _env(home, TOOLKG_CONFIG_DIR=str(config))
    code = "import sys, pathlib, toolkg.flows.local_server as server; server.acquire(pathlib.Path(sys.argv[1]))"
    started = subprocess.run([sys.executable, "-c", code, str(home)], env=env, capture_output=True, text=True)
    assert started.returncode == 0, started.stderr
    state = _state(home)
    assert state is not None
    yield state["port"], config, state
    for pid in _servers(home):
        os.kill(pid, signal.SIGKILL)


def _request(port: int, method: str, path: str, headers: dict[str, str], body: bytes | None = None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def _key(config: Path) -> str:
    return base64.b64encode((config / "prefect-api-auth").read_text().strip().encode()).decode()


def test_a_foreign_origin_host_or_a_missing_key_gets_nothing(server):
    port, config, state = server
    own = {"Host": f"127.0.0.1:{port}"}
    query = json.dumps({"limit": 5}).encode()
    json_body = {"Content-Type": "application/json"}
    key = {"Authorization": f"Basic {_key(config)}"} if (config / "prefect-api-auth").exists() else {}

    # A page on another site: its request (simple or preflighted) is refused, with no CORS header to read it by.
    for origin in ("https://evil.example", f"http://127.0.0.1:{port + 1 if port < 65535 else port - 1}", "null"):
        status, headers, _ = _request(port, "GET", "/api/health", {**own, "Origin": origin})
        assert status == 403 and "access-control-allow-origin" not in headers, (origin, status, headers)
        preflight = {**own, "Origin": origin, "Access-Control-Request-Method": "DELETE"}
        status, headers, _ = _request(port, "OPTIONS", FILTER, preflight)
        assert status == 403 and "access-control-allow-origin" not in headers, (origin, status, headers)
        status, headers, _ = _request(port, "POST", FILTER, {**own, **json_body, **key, "Origin": origin}, query)
        assert status == 403 and "access-control-allow-origin" not in headers, (origin, status, headers)

    # DNS rebinding: same-origin to the browser, but the Host is the page's name; even with the key it is refused.
    status, _, body = _request(port, "POST", FILTER, {"Host": f"evil.example:{port}", **json_body, **key}, query)
    assert status == 403 and b"is not a name of this server" in body, (status, body)

    # No key, or a wrong one: refused by Prefect's auth; the health check alone stays open (toolkg's probe).
    status, _, _ = _request(port, "POST", FILTER, {**own, **json_body}, query)
    assert status == 401
    wrong = {"Authorization": "Basic " + base64.b64encode(b"toolkg:guess").decode()}
    status, _, _ = _request(port, "POST", FILTER, {**own, **json_body, **wrong}, query)
    assert status == 401
    status, _, body = _request(port, "GET", "/api/health", own)
    assert status == 200 and body == b"true"

    # toolkg's own clients: its Host, no Origin (or the server's own), the key.
    for allowed in ({}, {"Origin": f"http://127.0.0.1:{port}"}, {"Origin": f"http://localhost:{port}"}):
        status, _, body = _request(port, "POST", FILTER, {**own, **json_body, **key, **allowed}, query)
        assert status == 200 and isinstance(json.loads(body), list), (allowed, status, body)

    # The key lives in toolkg's config folder, for this user alone; the state file holds only its digest.
    mode = stat.S_IMODE((config / "prefect-api-auth").stat().st_mode)
    assert mode == 0o600, oct(mode)
    assert (config / "prefect-api-auth").read_text().strip() not in json.dumps(state)


def test_the_server_stops_after_a_short_idle_period_by_default(server):
    _, _, state = server
    assert state["idle_seconds"] <= 300, state  # was 600 s: ten minutes for a page to find and use the port
