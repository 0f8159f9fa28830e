"""`retrieve --queries` and `eval` check every line of the queries file before any output.

A malformed line (not UTF-8, not JSON, not an object, fields of the wrong type) is one line on stderr
naming the file and line; by default the command stops with exit 2 and writes nothing, with
--skip-invalid it skips those lines, says how many in one line, and goes on. --out appears whole or not
at all.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import CASES
from tests.support.queries_files import MALFORMED, queries_file


@pytest.fixture(scope="module")
def store(built_store) -> Path:
    return built_store(CASES / "openai_tools.json", links=False)  # shared: these tests only read it


def problem_lines(stderr: str, path: Path) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(f"{path}:")]


@pytest.mark.parametrize("bad", list(MALFORMED), ids=[m.split(":")[0].split(" (")[0] for m in MALFORMED.values()])
def test_retrieve_stops_before_writing_and_names_the_line(store, cli, tmp_path, bad):
    path = queries_file(tmp_path, bad)
    out = tmp_path / "ranked.jsonl"
    result = cli("retrieve", "--store", str(store), "--method", "bm25", "--queries", str(path), "--out", str(out))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert problem_lines(result.stderr, path) == [f"{path}:3: {MALFORMED[bad]}"]
    assert result.stderr.splitlines()[-1].startswith("toolkg: error: 1 malformed line(s) in ")
    assert len(result.stderr.splitlines()) == 2 and result.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.jsonl"]  # no output file, no temporary left


def test_retrieve_lists_every_bad_line_and_keeps_an_existing_out_file(store, cli, tmp_path):
    path = queries_file(tmp_path, *MALFORMED)
    out = tmp_path / "ranked.jsonl"
    out.write_text("previous results\n", encoding="utf-8")
    result = cli("retrieve", "--store", str(store), "--method", "bm25", "--queries", str(path), "--out", str(out))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(problem_lines(result.stderr, path)) == len(MALFORMED)
    assert len(result.stderr.splitlines()) == len(MALFORMED) + 1
    assert out.read_text(encoding="utf-8") == "previous results\n"
    # to standard output: nothing printed either
    result = cli("retrieve", "--store", str(store), "--method", "bm25", "--queries", str(path))
    assert result.returncode == 2 and result.stdout == ""


def test_retrieve_skip_invalid_counts_them_in_one_line_and_goes_on(store, cli, tmp_path):
    path = queries_file(tmp_path, *MALFORMED)
    out = tmp_path / "ranked.jsonl"
    result = cli(
        "retrieve", "--store", str(store), "--method", "bm25", "-k", "2", "--queries", str(path), "--out", str(out),
        "--skip-invalid",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    skipped = [line for line in result.stderr.splitlines() if "malformed" in line]
    assert skipped == [
        f"toolkg: skipped {len(MALFORMED)} malformed line(s) of {path} (line 3, 4, 5, 6, 7, 8, 9, 10, 11)"
    ]
    ranked = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in ranked] == ["w0", "w1", "last"]
    assert ranked[0]["tools"][0]["tool"] == "get_weather"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.jsonl", "ranked.jsonl"]


def test_retrieve_accepts_lines_without_gold_and_steps_as_strings_only(store, cli, tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        '{"query": "weather in Paris", "extra": {"any": 1}}\n{"id": 5, "query": "forecast", "steps": null}\n'
    )
    result = cli("retrieve", "--store", str(store), "--method", "bm25", "-k", "1", "--queries", str(path))
    assert result.returncode == 0, result.stderr
    assert [json.loads(line)["id"] for line in result.stdout.splitlines()] == ["1", "5"]


def test_eval_needs_gold_tools_and_writes_nothing_on_a_bad_line(store, cli, tmp_path):
    path = queries_file(tmp_path, b'{"id": "nogold", "query": "forecast for Paris"}', *list(MALFORMED)[:2])
    out = tmp_path / "eval"
    result = cli("eval", "--store", str(store), "--queries", str(path), "--methods", "bm25", "--out", str(out))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert problem_lines(result.stderr, path) == [
        f"{path}:3: gold_tools: missing (eval needs the gold tools of every query)",
        f"{path}:4: steps: expected a list of strings, got a number; gold_tools: missing (eval needs the gold tools "
        "of every query)",
        f"{path}:5: not UTF-8 (byte 0xe9 at column 26)",
    ]
    assert not out.exists()
    result = cli(
        "eval", "--store", str(store), "--queries", str(path), "--methods", "bm25", "--k", "1,3", "--out", str(out),
        "--skip-invalid",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert re.search(rf"^toolkg: skipped 3 malformed line\(s\) of {re.escape(str(path))} \(line 3, 4, 5\)$",
                     result.stderr, re.M)  # fmt: skip
    report = json.loads((out / "eval.json").read_text(encoding="utf-8"))
    assert report["queries"] == 3 and report["methods"]["bm25"]["metrics"]["recall"]["1"] == 1.0
    assert sorted(p.name for p in out.iterdir()) == ["eval.json", "eval.png"]


def test_a_failure_while_ranking_leaves_no_partial_out_file(store, tmp_path, monkeypatch, capsys):
    import toolkg.retrieval as retrieval
    from toolkg.cli import main

    real = retrieval.make_retriever

    def failing(name, index, **options):
        retriever, calls = real(name, index, **options), []

        def retrieve(query, k):
            calls.append(query)
            if len(calls) == 2:
                raise OSError(28, "No space left on device")
            return type(retriever).retrieve(retriever, query, k)

        retriever.retrieve = retrieve  # type: ignore[method-assign]  # this one retriever fails, on purpose
        return retriever

    monkeypatch.setattr(retrieval, "make_retriever", failing)
    path = queries_file(tmp_path)
    out = tmp_path / "ranked.jsonl"
    args = ["retrieve", "--store", str(store), "--method", "bm25", "--queries", str(path), "--out", str(out)]
    assert main(args) == 1
    error = capsys.readouterr().err  # one line: a full disk names the file it was writing (toolkg.disk)
    assert "disk full while writing" in error and "ranked.jsonl" in error and error.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.jsonl"]  # neither the output nor its temporary
