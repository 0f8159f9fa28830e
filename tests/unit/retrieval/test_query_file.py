"""A queries file's malformed lines: each one problem naming its file and line (read in-process)."""

from __future__ import annotations

from tests.support.queries_files import MALFORMED, queries_file
from toolkg.retrieval import load_queries


def test_each_malformed_line_is_one_problem_naming_file_and_line(tmp_path):
    path = queries_file(tmp_path, *MALFORMED)
    rows, problems = load_queries(path)
    assert [r["id"] for r in rows] == ["w0", "w1", "last"]
    assert [(p.line, p.message) for p in problems] == [(n, m) for n, m in enumerate(MALFORMED.values(), start=3)]
    assert str(problems[0]) == f"{path}:3: steps: expected a list of strings, got a number"
    _, problems = load_queries(
        queries_file(tmp_path, b'{"query": "no gold"}', b'{"query": "q", "gold_tools": []}'), True
    )
    assert [p.message for p in problems] == [
        "gold_tools: missing (eval needs the gold tools of every query)",
        "gold_tools: empty (eval needs at least one gold tool per query)",
    ]
