"""Hostile catalogs through `toolkg build` in a subprocess: one line per item, no traceback unless -v."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import hostile
from tests.support.hostile_builds import _check


@settings(max_examples=3)
@given(catalog=hostile.catalogs(max_files=5), data=st.data())
def test_the_cli_prints_one_line_per_item_and_no_traceback(cli, catalog, data):
    """The same catalogs through `toolkg build` in a subprocess, as a user runs it."""
    folder = Path(tempfile.mkdtemp(prefix="toolkg-hostile-cli-"))
    try:
        hostile.write(catalog, folder / "catalog")
        result = cli("build", str(folder / "catalog"), "--store", str(folder / "store"), "--no-links")
        assert result.returncode in (0, 3), result.stderr[-2000:]
        assert "Traceback" not in result.stdout + result.stderr
        for line in (result.stdout + result.stderr).splitlines():
            assert not any(ch in line for ch in "\r\x1b\x00\u202e"), repr(line)
        _check(catalog, folder / "store", result.returncode)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_an_unexpected_failure_is_one_line_and_v_shows_the_traceback(cli_process, tmp_path):
    """In a subprocess: the one line is all a user sees, Prefect's own console logs of the crashed run included."""
    cli = cli_process
    catalog = tmp_path / "one.json"
    catalog.write_text(json.dumps({"tools": [{"name": "ping", "description": "Ping"}]}))
    args = ("build", str(catalog), "--store", str(tmp_path / "store"), "--no-links")
    plain = cli(*args, env={"TOOLKG_FAULT": "raise:ingest"})
    assert plain.returncode == 1 and plain.stderr.count("\n") == 1, plain.stderr
    assert plain.stderr.startswith("toolkg: error: internal error: InjectedFault: fault injected at ingest")
    assert "rerun with -v" in plain.stderr and "Traceback" not in plain.stdout + plain.stderr
    verbose = cli(*args, "-v", env={"TOOLKG_FAULT": "raise:ingest"})
    assert verbose.returncode == 1 and "Traceback" in verbose.stderr
    assert verbose.stderr.rstrip().splitlines()[-1].startswith("toolkg: error: internal error: InjectedFault")


def test_a_symlink_loop_in_a_folder_is_quarantined_and_the_rest_builds(cli, tmp_path):
    """Two links pointing at each other (and one at itself) are one quarantine line each; the real manifest
    beside them loads, and a link out of the folder stays unfollowed and reported."""
    folder = tmp_path / "catalog"
    folder.mkdir()
    (folder / "real.json").write_text(json.dumps({"server": "real", "tools": [{"name": "ping", "description": "P"}]}))
    (folder / "a.json").symlink_to(folder / "b.json")
    (folder / "b.json").symlink_to(folder / "a.json")
    (folder / "self.yaml").symlink_to(folder / "self.yaml")
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"server": "outside", "tools": [{"name": "leak", "description": "L"}]}))
    (folder / "out.json").symlink_to(outside)
    store = tmp_path / "store"
    result = cli("build", str(folder), "--store", str(store), "--no-links", "--json")
    assert "Traceback" not in result.stdout + result.stderr and "internal error" not in result.stderr, result.stderr
    assert result.returncode == 3, result.stderr  # built, with quarantined items
    summary = json.loads(result.stdout)
    reasons = {Path(q["item"]).name: q["reason"] for q in summary["quarantined"]}
    assert set(reasons) == {"a.json", "b.json", "self.yaml", "out.json"}, reasons
    assert all("loops" in reasons[name] for name in ("a.json", "b.json", "self.yaml")), reasons
    assert "outside" in reasons["out.json"]
    assert summary["totals"]["tools"] == 1
