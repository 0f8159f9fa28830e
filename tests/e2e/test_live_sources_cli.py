"""A live address with credentials in it is refused by `toolkg build` in one line."""

from __future__ import annotations

from pathlib import Path


def test_cli_refuses_credentials_in_an_address_in_one_line(cli, tmp_path: Path) -> None:
    done = cli("build", "https://user:hunter2hunter2@example.com/mcp", "--store", str(tmp_path / "s"))
    assert done.returncode == 2 and "put them in a configuration file's headers" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "hunter2" not in done.stderr
