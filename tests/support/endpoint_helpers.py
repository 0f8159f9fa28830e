"""Start `toolkg serve` in a subprocess on a free loopback port and talk to it over HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import TOOLKG


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(store: Path, *extra: str):
    """`toolkg serve` on 127.0.0.1; yields its base URL; stops it (and its Oxigraph) after."""
    with serve_process(store, *extra) as (base, _):
        yield base


@contextmanager
def serve_process(store: Path, *extra: str, toolkg: Path = TOOLKG, env: dict | None = None, cwd: Path | None = None):
    """As ``serving``, yielding (base URL, the process) so a test can read what it printed after it stops; another
    install's ``toolkg`` (the installed wheel's) may be given, with its environment and working folder."""
    port = free_port()
    process = subprocess.Popen(
        [str(toolkg), "serve", "--store", str(store), "--bind", f"127.0.0.1:{port}", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env or os.environ.copy(),
        cwd=cwd,
    )
    assert process.stderr is not None  # piped
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, f"toolkg serve exited: {process.stderr.read()}"
            try:
                get(base + "/status")
                break
            except OSError:
                assert time.monotonic() < deadline, "toolkg serve did not answer within 60 s"
                time.sleep(0.2)
        yield base, process
    finally:
        process.terminate()
        process.wait(10)


def get(url: str, timeout: float = 30) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


def request(url: str, data: bytes | None = None, method: str = "POST", headers: dict | None = None):
    """(status, body text, headers) without raising on HTTP errors."""
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def sparql(base: str, query: str) -> list[dict[str, str]]:
    """SELECT over HTTP (SPARQL 1.1 protocol, form-encoded POST); rows as plain strings."""
    data = urllib.parse.urlencode({"query": query}).encode()
    status, body, _ = request(
        base + "/query",
        data,
        headers={"Accept": "application/sparql-results+json", "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert status == 200, body
    return [{k: v["value"] for k, v in row.items()} for row in json.loads(body)["results"]["bindings"]]
