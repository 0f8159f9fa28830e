"""The poisoned corpus trust_bench.py measures on is what ``benchmarks/poisoned/write.py`` builds from the cases
in ``benchmarks/poisoned/cases/``: file for file and byte for byte the committed files (the same bytes the old
3,123-line script wrote, where the cases were Python code)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POISONED = ROOT / "benchmarks" / "poisoned"


def _builder():
    spec = importlib.util.spec_from_file_location("poisoned_write", POISONED / "write.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_builder_writes_the_committed_corpus_byte_for_byte(tmp_path):
    builder = _builder()
    builder.write(tmp_path)
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert written == sorted(builder.CORPUS)
    for name in written:
        assert (tmp_path / name).read_bytes() == (POISONED / name).read_bytes(), name


def test_cases_are_data_and_their_hidden_characters_visible():
    # the builder holds no case (the old script was the cases); every case file is ASCII, so a zero-width,
    # tag or bidi character reads as its \\u escape in review rather than hiding in the file
    assert len((POISONED / "write.py").read_text(encoding="utf-8").splitlines()) < 200
    files = sorted((POISONED / "cases").glob("*.json*"))
    assert {p.stem for p in files} >= {"injection", "hidden", "shadowing", "changed", "trusted", "ordinary"}
    for path in files:
        text = path.read_bytes().decode("ascii")  # raises on a raw non-ASCII character
        rows = [json.loads(text)] if path.suffix == ".json" else [json.loads(line) for line in text.splitlines()]
        assert rows, path.name


def test_every_labelled_tool_is_in_the_corpus():
    labels = json.loads((POISONED / "labels.json").read_text(encoding="utf-8"))
    builder = _builder()
    found = set()
    for name in builder.CORPUS[:-1]:
        entries = json.loads((POISONED / name).read_text(encoding="utf-8"))
        found |= {f"{key}::{tool}" for key, tool, _ in builder.tool_ids(entries)}
    assert found == set(labels)
    assert {"injection", "hidden", "shadowing", "changed", "benign"} == {v["kind"] for v in labels.values()}
