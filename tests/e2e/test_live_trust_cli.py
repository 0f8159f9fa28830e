"""A build starts (or connects to) a live MCP server only from a configuration the user named (issue 40).

A folder given to `toolkg build` may hold files of anyone's making (a vendored package's settings, a
downloaded catalog): a client configuration or a registry server.json found while walking it is listed in
the summary as skipped, never started nor connected to, and never read as a manifest. The traps below
would leave evidence if they ran: a stdio command (or a server.json package runner) that creates a
marker file, and URLs pointing at a local socket that records every connection. Naming the file itself
still lists its servers, which the last step shows (and which proves the traps work).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TOOLS = {
    "server": "local",
    "tools": [
        {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        }
    ],
}


class ConnectionRecorder:
    """A socket on 127.0.0.1 that accepts, records and closes every connection (no HTTP answer at all)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                connection, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)
        self.listener.close()


@pytest.fixture
def recorder():
    recording = ConnectionRecorder()
    yield recording
    recording.close()


def _trapped_catalog(root: Path, marker: Path, port: int) -> tuple[Path, Path, Path]:
    """A catalog folder with one manifest and two live-source files of a stranger's making."""
    catalog = root / "catalog"
    catalog.mkdir()
    (catalog / "tools.json").write_text(json.dumps(TOOLS))
    leave_marker = f"open({str(marker)!r}, 'w').write('ran')"
    settings = catalog / "vendor" / "pkg" / "package-settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "stdio-trap": {"command": sys.executable, "args": ["-c", leave_marker]},
                    "http-trap": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"},
                    "sse-trap": {"type": "sse", "url": f"http://127.0.0.1:{port}/sse"},
                }
            }
        )
    )
    registry = catalog / "vendor" / "registry" / "server.json"
    registry.parent.mkdir(parents=True)
    package = {  # a runtimeHint is a command like any other: here, the Python that leaves the marker
        "name": "io.example/package-trap",
        "packages": [
            {
                "registryType": "pypi",
                "identifier": "trap",
                "version": "1.0",
                "runtimeHint": sys.executable,
                "runtimeArguments": ["-c", leave_marker],
                "transport": {"type": "stdio"},
            }
        ],
    }
    remote = {
        "name": "io.example/remote-trap",
        "remotes": [{"type": "streamable-http", "url": f"http://127.0.0.1:{port}/mcp"}],
    }
    registry.write_text(json.dumps({"servers": [{"server": package}, {"server": remote}]}))
    return catalog, settings, registry


def test_configurations_found_in_a_folder_are_skipped_untouched_and_named_ones_are_listed(
    cli, tmp_path: Path, recorder: ConnectionRecorder
) -> None:
    marker = tmp_path / "marker"
    catalog, settings, registry = _trapped_catalog(tmp_path, marker, recorder.port)
    store = tmp_path / "store"

    done = cli("build", str(catalog), "--store", str(store), "--json", "--set", "live.timeout=10")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert not marker.exists() and recorder.connections == 0
    assert summary["live"] == [] and summary["quarantined"] == []
    assert summary["manifests_seen"] == 1  # tools.json; neither configuration was read as a manifest
    skipped = {Path(s["configuration"]).name: s for s in summary["live_skipped"]}
    assert (skipped["package-settings.json"]["servers"], skipped["server.json"]["servers"]) == (3, 2)
    assert Path(skipped["package-settings.json"]["configuration"]).resolve() == settings.resolve()
    assert "name the file" in skipped["server.json"]["reason"]
    assert not (store / "live").exists()

    text = cli("build", str(catalog), "--store", str(tmp_path / "store-text"), "--set", "live.timeout=10")
    assert text.returncode == 0, text.stderr
    shown = [line.strip() for line in text.stdout.splitlines() if "skipped live configuration" in line]
    assert len(shown) == 2, text.stdout
    line = next(line for line in shown if "package-settings.json" in line)
    assert "(3 servers)" in line and "name the file" in line and str(Path("vendor", "pkg")) in line

    only = cli("build", str(catalog), "--store", str(store), "--only", "local")
    assert only.returncode == 0, only.stdout + only.stderr
    assert "skipped live configuration" in only.stderr
    trap = cli("build", str(catalog), "--store", str(store), "--only", "stdio-trap")
    assert trap.returncode == 2 and "--only stdio-trap: no manifest under the paths defines it" in trap.stderr
    assert "package-settings.json (3 servers)" in trap.stderr  # why not: its configuration was skipped
    assert not marker.exists() and recorder.connections == 0

    # Named, the same files are listed: the traps spring (the stdio one writes the marker and exits, the
    # recorder hangs up on the HTTP ones), so the checks above would have seen them run.
    named = cli(
        "build", str(catalog), str(settings), str(registry), "--store", str(store), "--json", "--set", "live.timeout=10"
    )
    assert named.returncode == 3, named.stderr  # every trap fails to list: quarantined
    summary = json.loads(named.stdout)
    assert marker.exists() and recorder.connections > 0
    assert sorted(s["server"] for s in summary["live"]) == [
        "http-trap",
        "package-trap",
        "remote-trap",
        "sse-trap",
        "stdio-trap",
    ]
    assert summary["live_skipped"] == []  # named once, found again inside the folder: listed, not skipped
    assert summary["manifests_seen"] == 1


def test_a_folder_holding_only_a_configuration_says_how_to_list_it(cli, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    folder = tmp_path / "only-config"
    folder.mkdir()
    leave_marker = f"open({str(marker)!r}, 'w').write('ran')"
    (folder / "mcp.json").write_text(
        json.dumps({"mcpServers": {"trap": {"command": sys.executable, "args": ["-c", leave_marker]}}})
    )
    done = cli("build", str(folder), "--store", str(tmp_path / "store"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "mcp.json" in done.stderr and "name the file" in done.stderr
    assert not marker.exists()
