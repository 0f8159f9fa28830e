"""Helpers of the live-MCP tests: the pinned real servers (``make mcp-servers``), our toy server, free ports."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.endpoint_helpers import free_port

ROOT = Path(__file__).resolve().parents[2]
SERVERS = Path(os.environ.get("TOOLKG_TEST_MCP_SERVERS", ROOT / ".mcp-servers"))
TOY = ROOT / "tests" / "mcp_servers" / "toy_server.py"
TOY_TOOLS = ROOT / "tests" / "mcp_servers" / "toy_tools.json"


def real_servers(repository: Path, folder: Path) -> dict[str, dict]:
    """The six pinned reference servers as client-configuration entries (stdio commands)."""
    py, node = SERVERS / "py" / "bin", SERVERS / "node_modules" / ".bin"
    if not (py / "mcp-server-time").exists() or not (node / "mcp-server-memory").exists():
        message = f"the real MCP servers are not installed in {SERVERS}: run 'make mcp-servers'"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return {
        "time": {"command": str(py / "mcp-server-time"), "args": ["--local-timezone", "Europe/Paris"]},
        "git": {"command": str(py / "mcp-server-git"), "args": ["--repository", str(repository)]},
        "fetch": {"command": str(py / "mcp-server-fetch")},  # listed only: nothing is ever fetched
        "everything": {"command": str(node / "mcp-server-everything")},
        "filesystem": {"command": str(node / "mcp-server-filesystem"), "args": [str(folder)]},
        "memory": {"command": str(node / "mcp-server-memory"), "env": {"MEMORY_FILE_PATH": str(folder / "m.json")}},
    }


def toy_stdio(tools: Path = TOY_TOOLS, *extra: str) -> dict:
    return {"command": sys.executable, "args": [str(TOY), "--tools", str(tools), *extra]}


def wait_listening(port: int, process: subprocess.Popen, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server on {port} exited: {process.stderr.read() if process.stderr else ''}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listening on 127.0.0.1:{port} after {seconds}s")


def start_toy_http(*extra: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    """Our toy server over Streamable HTTP on 127.0.0.1; returns the process and its /mcp URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(TOY), "--tools", str(TOY_TOOLS), "--transport", "http", "--port", str(port), *extra],
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_listening(port, process)
    return process, f"http://127.0.0.1:{port}/mcp"


def files_containing(roots: list[Path], needle: str) -> list[str]:
    """Every file under ``roots`` whose bytes contain ``needle``."""
    hits, wanted = [], needle.encode()
    for root in roots:
        for path in [root] if root.is_file() else root.rglob("*"):
            try:
                if path.is_file() and wanted in path.read_bytes():
                    hits.append(str(path))
            except OSError:
                continue
    return hits
