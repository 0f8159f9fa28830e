"""The docs: docs/cli.md is what docs/gen_cli.py makes from the CLI's parsers now (so --help and the reference
cannot drift), the MkDocs site builds with --strict (a broken link or anchor is an error), and the README stays
a short front page whose links resolve."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

MKDOCS = Path(sys.executable).with_name("mkdocs")


def _gen_cli():
    spec = importlib.util.spec_from_file_location("gen_cli", ROOT / "docs" / "gen_cli.py")
    assert spec is not None and spec.loader is not None  # a .py file: the source loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_is_what_the_parsers_say():
    committed = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert committed == _gen_cli().render(), "docs/cli.md is out of date: run .venv/bin/python docs/gen_cli.py"


def test_the_cli_reference_does_not_depend_on_the_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    narrow = _gen_cli().render()
    monkeypatch.setenv("COLUMNS", "250")
    assert _gen_cli().render() == narrow
    assert os.environ["COLUMNS"] == "250"  # restored


def test_the_site_builds_strict(tmp_path: Path):
    done = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
    assert (tmp_path / "site" / "cli" / "index.html").exists()


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert [p for p in pages if f": {p}" not in nav] == []


def test_the_readme_is_a_short_front_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    for section in ("## Two commands", "## A first session", "## Data flow", "## Packages"):
        assert section in readme


def test_relative_links_outside_the_site_resolve():
    """README.md and benchmarks/README.md are not part of the site: their relative links are checked here."""
    for page in (ROOT / "README.md", ROOT / "benchmarks" / "README.md"):
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            assert path.exists(), f"{page.relative_to(ROOT)} links to {target}, which does not exist"
