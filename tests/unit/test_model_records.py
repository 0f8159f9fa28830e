"""Every weight file the package ships carries a record of its fit (``benchmarks/training``: ``make models``):
the record describes the file as it is, the data it lists are the repository's data now (a label edited without
a re-fit fails here), and the package's loader still reads the file."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.training import models as training_models
from benchmarks.training import records as training_records

ROOT = Path(__file__).resolve().parents[2]
FITTED = {Path(f.path).stem: f for f in training_records.FITTED}


@pytest.fixture
def records():
    return training_records


def _shipped_json(records) -> set[str]:
    """Every JSON file of the package's source that is a file of its own (the samples are links to data/)."""
    found = set()
    for folder in records.PACKAGE_SOURCE:
        for path in (ROOT / folder).rglob("*.json"):
            if path.is_symlink() or path.name.endswith(".record.json") or "__pycache__" in path.parts:
                continue
            found.add(path.relative_to(ROOT).as_posix())
    return found


def test_every_shipped_json_is_a_fitted_file_with_a_fit(records):
    assert _shipped_json(records) == {f.path for f in records.FITTED}


@pytest.mark.parametrize("name", FITTED)
def test_record_matches_weights_and_data(records, name):
    fitted = FITTED[name]
    assert records.record_problems(fitted) == []
    record = json.loads(records.record_path(ROOT / fitted.path).read_text(encoding="utf-8"))
    assert record["command"].startswith("python ") and "benchmarks" in record["command"]
    assert len(record["commit"]) == 40
    assert record["libraries"]["numpy"] if record["refit"] else record["libraries"] is None
    assert all(not name.endswith(".py") for name in record["inputs"])


@pytest.mark.parametrize("name", FITTED)
def test_declared_data_is_what_a_traced_fit_read(records, name):
    # a record written without a re-fit lists the declared globs; a traced re-fit keeps those globs honest
    record = json.loads(records.record_path(ROOT / FITTED[name].path).read_text(encoding="utf-8"))
    if record["inputs_from"] != "trace":
        pytest.skip(f"{name}: not re-fit here, its data as declared (python -m benchmarks.training.models {name})")
    shipped = {f.path for f in records.FITTED}
    assert sorted(set(record["inputs"]) - shipped) == records.declared_inputs(FITTED[name])


@pytest.mark.parametrize("name", FITTED)
def test_loader_reads_the_shipped_file(name):
    module, _, function = FITTED[name].loader.partition(":")
    loader = getattr(importlib.import_module(module), function)
    assert loader() is not None


def test_an_edited_label_or_other_weights_fail_the_record(records, tmp_path, monkeypatch):
    (tmp_path / "inputs").mkdir()
    (tmp_path / "inputs" / "labels.jsonl").write_text('{"id": 1, "label": true}\n')
    (tmp_path / "model.json").write_text('{"weights": [1.0]}\n')
    fitted = records.FittedFile("model.json", ("fit.py",), "")
    monkeypatch.setattr(records, "ROOT", tmp_path)
    record = {"sha256": records.sha256(tmp_path / "model.json"), "inputs": {}}
    record["inputs"]["inputs/labels.jsonl"] = records.sha256(tmp_path / "inputs" / "labels.jsonl")
    records.record_path(tmp_path / "model.json").write_text(json.dumps(record))
    assert records.record_problems(fitted) == []
    (tmp_path / "inputs" / "labels.jsonl").write_text('{"id": 1, "label": false}\n')
    assert records.record_problems(fitted) == [
        "model.json was fit on another inputs/labels.jsonl: refit it (make models)"
    ]
    (tmp_path / "model.json").write_text('{"weights": [2.0]}\n')
    assert "model.json is not the file its record describes" in records.record_problems(fitted)[0]


@pytest.mark.slow
def test_trace_sees_what_a_fit_and_its_subprocesses_read(tmp_path):
    """The trace the records come from: a read in the fit, a read in a child process it starts, a write."""
    (tmp_path / "labels.jsonl").write_text("{}\n")
    (tmp_path / "catalog.json").write_text("{}\n")
    (tmp_path / "fit.py").write_text(
        "import json, pathlib, subprocess, sys\n"
        "json.loads(pathlib.Path('labels.jsonl').read_text())\n"
        "subprocess.run([sys.executable, '-c', 'open(\"catalog.json\").read()'], check=True)\n"
        "pathlib.Path('weights.json').write_text('{}')\n"
    )
    read, written = training_models.traced_run([sys.executable, "fit.py"], cwd=tmp_path)
    assert {tmp_path / "labels.jsonl", tmp_path / "catalog.json"} <= read
    assert written == {tmp_path / "weights.json"}
    assert tmp_path / "fit.py" not in read  # code is not data


def test_models_command_refuses_an_unknown_file():
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.training.models", "--check", "no-such-file"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0 and result.stderr.strip() == "no shipped weight file matches no-such-file"
