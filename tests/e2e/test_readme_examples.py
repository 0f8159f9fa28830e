"""The Python API examples of docs/live-mcp.md run as written (each block marked ``<!-- readme-example -->``), in
order, in one folder holding an ``mcp.json`` that names our toy booking server; what they print is checked."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, TOOLKG
from tests.support.live_helpers import toy_stdio

pytestmark = pytest.mark.slow
_BLOCK = re.compile(r"<!-- readme-example -->\n```python\n(.*?)```", re.DOTALL)


def test_readme_python_examples_run(tmp_path: Path, prefect_api: str) -> None:
    blocks = _BLOCK.findall((ROOT / "docs" / "live-mcp.md").read_text(encoding="utf-8"))
    assert len(blocks) == 4, "docs/live-mcp.md's examples moved: update this test with them"
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"bookings": toy_stdio()}}))
    env = {**os.environ, "PREFECT_API_URL": prefect_api, "PATH": f"{TOOLKG.parent}{os.pathsep}{os.environ['PATH']}"}
    printed = []
    for block in blocks:
        done = subprocess.run(
            [sys.executable, "-c", block], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, f"{block}\n{done.stderr[-3000:]}"
        printed.append(done.stdout)
    listed, built, searched, over_mcp = printed
    assert listed.startswith("bookings toy-bookings ['login', 'search_flights', 'book_flight'")
    assert built.strip() == "bookings new 5"
    first = searched.splitlines()[0]
    assert first.startswith("bookings::book_flight") and "'bookings::login'" in first
    assert searched.splitlines()[-1].endswith("'bookings::cancel_booking']")
    assert over_mcp.splitlines()[0].startswith("bookings::cancel_booking ['bookings::")
