"""The package's metadata has one source: pyproject.toml."""

from __future__ import annotations

import tomllib

import toolkg
from tests.support.layout import ROOT


def test_the_version_is_written_once():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert toolkg.__version__ == project["version"]
    assert f'"{project["version"]}"' not in (ROOT / "src" / "toolkg" / "__init__.py").read_text(encoding="utf-8")


def test_the_license_file_is_at_the_root_and_named_in_the_metadata():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").lstrip().startswith("Apache License")
