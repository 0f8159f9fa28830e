"""What only some commands use is an extra (pyproject's `dask` and `plots`): without it the rest works, and the
command that needs it says which extra in one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from toolkg.errors import ConfigError


def test_dask_without_its_extra_is_one_line_naming_the_extra(monkeypatch) -> None:
    from toolkg.flows.scale import dask_task_runner

    monkeypatch.setitem(sys.modules, "prefect_dask", None)  # as if not installed: the import fails
    with pytest.raises(ConfigError, match=r"^--dask needs the dask extra: pip install 'toolkg\[dask\]'$"):
        dask_task_runner("local:2")


def test_eval_without_the_plots_extra_writes_the_report_alone(monkeypatch, tmp_path: Path) -> None:
    import importlib.util

    from toolkg.retrieval import evaluate

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    report = {"k": [5], "methods": {}}
    assert evaluate.write_outputs(report, tmp_path / "eval.json", tmp_path / "eval.png") is False
    assert json.loads((tmp_path / "eval.json").read_text()) == report
    assert not (tmp_path / "eval.png").exists()


def test_the_extras_hold_what_only_some_commands_import() -> None:
    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    core = " ".join(project["dependencies"])
    extras = project["optional-dependencies"]
    assert "prefect-dask" in " ".join(extras["dask"]) and "matplotlib" in " ".join(extras["plots"])
    assert "prefect-dask" not in core and "matplotlib" not in core
    for package in ("openai", "instructor", "rdflib", "pyoxigraph", "prefect", "rapidfuzz", "spacy"):  # the card's
        assert any(d.startswith(package) for d in project["dependencies"]), package
