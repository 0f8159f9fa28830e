"""`toolkg serve --config` and `toolkg mcp --config`: the [serve] and [mcp] sections of the TOML file a build
reads, each key the flag of its name, a flag given winning over its key, a bad value one line and exit 2."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import anyio
import pytest

from tests.conftest import CASES, TOOLKG
from tests.support.cli_runner import run_in_process
from tests.support.endpoint_helpers import free_port, get


def _toolkg(*args: str) -> subprocess.CompletedProcess:
    """A command that checks its options and exits: in-process (tests/support/cli_runner.py), without a
    subprocess's second or two of start-up; the servers the config starts below are real processes."""
    return run_in_process(*args)


def _config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "toolkg.toml"
    path.write_text(text)
    return str(path)


@pytest.mark.slow
def test_mcp_takes_its_section_and_a_flag_wins(built_store, tmp_path):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    store = built_store(CASES / "mcp_bing.json")
    config = _config(tmp_path, "[mcp]\nmax_rows = 2\nsparql_timeout = 1\n[build]\nprune = true\n")
    server = StdioServerParameters(
        command=str(TOOLKG), args=["mcp", "--store", str(store), "--config", config, "--max-rows", "4"]
    )
    runaway = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"

    async def run():
        async with Client(server, mode="legacy") as client:
            rows = await client.call_tool("sparql", {"query": "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"})
            slow = await client.call_tool("sparql", {"query": runaway})
            return rows, slow

    rows, slow = anyio.run(run)
    assert len(rows.structured_content["rows"]) == 4  # --max-rows 4 over the file's max_rows = 2
    assert slow.is_error and "stopped after 1s" in slow.content[0].text  # the file's sparql_timeout


@pytest.mark.slow
def test_serve_takes_its_section_and_a_flag_wins(built_store, tmp_path):
    store = built_store(CASES / "mcp_bing.json")
    port = free_port()
    config = _config(tmp_path, f'[serve]\nbind = "127.0.0.1:{port}"\ntimeout = 7\nallow_federation = true\n')
    process = subprocess.Popen(
        [str(TOOLKG), "serve", "--store", str(store), "--config", config, "--timeout", "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None  # piped
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.stderr.read()
            try:
                status = get(f"http://127.0.0.1:{port}/status")  # the file's bind
                break
            except OSError:
                assert time.monotonic() < deadline, "toolkg serve did not answer on the bind its config names"
                time.sleep(0.2)
        assert status["read_only"] is True
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert "query timeout 3s" in stderr  # --timeout 3 over the file's timeout = 7
    assert "SERVICE allowed" in stderr  # the file's allow_federation


@pytest.mark.parametrize(
    ("command", "toml", "flags", "expected"),
    [
        ("mcp", "[mcp]\nmax_rows = 0\n", (), "mcp.max_rows: Input should be greater than or equal to 1"),
        ("mcp", '[mcp]\ntransport = "ws"\n', (), "mcp.transport: Input should be 'stdio' or 'http'"),
        ("mcp", "[mcp]\nno_auth = true\n", (), "mcp: no_auth and token_file (--no-auth, --token-file) are for"),
        ("mcp", "[mcp]\n", ("--sparql-memory", "10"), "--sparql-memory: Input should be greater than or equal to 64"),
        ("mcp", "[mcp]\nallow_destructive = true\n", (), "allow_destructive (--allow-destructive) needs allow_call"),
        ("serve", '[serve]\ntimeout = "soon"\n', (), "serve.timeout: Input should be a valid integer"),
        ("serve", "[serve]\nport = 7878\n", (), "unknown setting 'serve.port'; serve takes: bind, timeout"),
        ("serve", "[serve]\n", ("--memory-limit", "1"), "--memory-limit: Input should be greater than or equal to 64"),
    ],
)
def test_a_bad_value_is_one_line_and_exit_2(tmp_path, command, toml, flags, expected):
    done = _toolkg(command, "--store", str(tmp_path / "none"), "--config", _config(tmp_path, toml), *flags)
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_a_flag_alone_still_works_as_before(tmp_path):
    """Without --config, the flags are checked as the keys are, before any store is looked for."""
    done = _toolkg("mcp", "--store", str(tmp_path / "none"), "--max-rows", "0")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "--max-rows: Input should be greater than or equal to 1" in done.stderr
    done = _toolkg("serve", "--store", str(tmp_path / "none"), "--timeout", "0")
    assert done.returncode == 2 and "--timeout: Input should be greater than or equal to 1" in done.stderr


def test_show_token_reads_the_files_token_file_over_stdio_as_before(tmp_path):
    secret = "k" * 48
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(secret + "\n")
    tokens.chmod(0o600)
    config = _config(tmp_path, f'[mcp]\ntoken_file = "{tokens}"\n')
    done = _toolkg("mcp", "--show-token", "--config", config)  # the file's token_file, transport left stdio
    assert done.returncode == 0 and done.stdout.strip() == secret, done.stderr
    done = _toolkg("mcp", "--show-token", "--token-file", str(tokens))  # the flag alone, as it always worked
    assert done.returncode == 0 and done.stdout.strip() == secret, done.stderr
