"""The evaluation format (one JSON object per line), checked line by line.

A line is ``{"id", "query", "steps": [str], "gold_tools": [str], "gold_servers": [str]?,
"main_tool": str | null, "gold_tool_alternatives": {gold: [ids]}?}``; other keys are allowed and ignored.
``retrieve`` needs ``query`` (``id`` defaults to the line number); ``eval`` also needs ``gold_tools``.

The file is read as bytes, line by line, so a line that is not UTF-8 is one malformed line like any
other. Each malformed line becomes one ``Problem`` naming the file, the line and what is wrong:

>>> check_line(b'{"id": "a", "query": "q", "steps": "abc"}', labelled=False)
'steps: expected a list of strings, got a string'
>>> check_line(b'{"query": "q", "gold_tools": ["s::t"], "gold_tool_alternatives": ["s::u"]}', labelled=True)
'gold_tool_alternatives: expected an object of {gold: [ids]}, got an array'
>>> check_line(b'[{}]', labelled=False)
'expected a JSON object, got an array'
>>> check_line(b'{"query": "q"}', labelled=True)
'gold_tools: missing (eval needs the gold tools of every query)'
>>> check_line(b'{"query": "caf\\xe9"}', labelled=False)
'not UTF-8 (byte 0xe9 at column 15)'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails

from toolkg.display import one_line
from toolkg.errors import ConfigError, NotFoundError


class QueryLine(BaseModel):
    """One query for ``retrieve``: what it asks, and optionally its steps."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    id: str | int | None = None
    query: str
    steps: list[str] | None = None
    gold_tools: list[str] | None = None
    gold_servers: list[str] | None = None
    main_tool: str | None = None
    gold_tool_alternatives: dict[str, list[str]] | None = None

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("empty query")
        return value


class LabelledQuery(QueryLine):
    """One query for ``eval``: the gold tools are required."""

    gold_tools: list[str] = Field(min_length=1)


_TYPE_NAMES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    type(None): "null",
}
_EXPECTED = {
    "id": "a string or an integer",
    "query": "a string",
    "steps": "a list of strings",
    "gold_tools": "a list of strings",
    "gold_servers": "a list of strings",
    "main_tool": "a string or null",
    "gold_tool_alternatives": "an object of {gold: [ids]}",
}


def _kind(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _describe(row: dict, error: ErrorDetails) -> tuple[str, str]:
    """One pydantic error as (field, 'field: what is wrong')."""
    loc = error["loc"]
    field = str(loc[0]) if loc else ""
    if error["type"] == "missing":
        need = " (eval needs the gold tools of every query)" if field == "gold_tools" else ""
        return field, f"{field}: missing{need}"
    if error["type"] == "too_short" and field == "gold_tools":
        return field, "gold_tools: empty (eval needs at least one gold tool per query)"
    if error["type"] == "value_error":
        return field, f"{field}: {error['msg'].removeprefix('Value error, ')}"
    if field not in _EXPECTED or field not in row:
        return field, f"{'.'.join(map(str, loc))}: {error['msg']}"
    value, path = row[field], ""
    for part in loc[1:]:  # down to the offending element (union member names are not in the data)
        if isinstance(value, list) and isinstance(part, int) and part < len(value):
            path, value = f"{path}[{part}]", value[part]
        elif isinstance(value, dict) and isinstance(part, str) and part in value:
            path, value = f"{path}[{json.dumps(part, ensure_ascii=False)}]", value[part]
    what = f"{field}{path} is {_kind(value)}" if path else f"got {_kind(value)}"
    return field, f"{field}: expected {_EXPECTED[field]}, {'but ' if path else ''}{what}"


def check_line(raw: bytes, labelled: bool = False, first: bool = False) -> dict | str:
    """The line's JSON object with ``steps`` made a list (``id`` may still be absent), or one line
    saying what is wrong with it. ``first``: the file's first line, which may start with a BOM."""
    try:
        text = raw.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"not JSON: {exc.msg} at column {exc.colno}"
    except RecursionError:
        return "not JSON: nested too deeply"
    if not isinstance(row, dict):
        return f"expected a JSON object, got {_kind(row)}"
    try:
        json.dumps(row, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return "holds an unpaired surrogate escape (\\ud800-\\udfff): not valid Unicode"
    model = LabelledQuery if labelled else QueryLine
    try:
        checked = model.model_validate(row)
    except ValidationError as exc:
        by_field: dict[str, str] = {}
        for error in exc.errors(include_url=False):
            field, message = _describe(row, error)
            by_field.setdefault(field, message)
        messages = list(by_field.values())
        return "; ".join(messages[:4]) + (f"; and {len(messages) - 4} more" if len(messages) > 4 else "")
    row["steps"] = list(checked.steps or [])
    return row


@dataclass(frozen=True)
class Problem:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{one_line(self.path)}:{self.line}: {one_line(self.message, 300)}"


class InvalidQueries(ConfigError):
    """Malformed lines in a queries file; ``problems`` has one per line."""

    def __init__(self, path: str, problems: list[Problem]) -> None:
        self.path, self.problems = path, problems
        super().__init__(
            f"{len(problems)} malformed line(s) in {one_line(path)}; nothing was written "
            "(fix them, or pass --skip-invalid to skip them)"
        )


def load_queries(path: str | Path, labelled: bool = False) -> tuple[list[dict], list[Problem]]:
    """(valid rows as dicts, one problem per malformed line); blank lines are skipped.

    Each row is the line's JSON object with the checked fields normalised: ``id`` a string (the line
    number when absent), ``steps`` a list; other keys as they were."""
    rows: list[dict] = []
    problems: list[Problem] = []
    try:
        handle = open(path, "rb")  # noqa: SIM115
    except OSError as exc:
        raise NotFoundError(f"cannot read {one_line(str(path))}: {exc.strerror}") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            row = check_line(raw.strip(), labelled, first=number == 1)
            if isinstance(row, str):
                problems.append(Problem(str(path), number, row))
                continue
            row["id"] = str(row["id"]) if row.get("id") is not None else str(number)
            rows.append(row)
    return rows, problems


def read_queries(path: str | Path, labelled: bool = False, skip_invalid: bool = False) -> list[dict]:
    """The valid queries of ``path``. A malformed line raises ``InvalidQueries`` (listing every one),
    unless ``skip_invalid``: then malformed lines are left out (``load_queries`` says which)."""
    rows, problems = load_queries(path, labelled)
    if problems and not skip_invalid:
        raise InvalidQueries(str(path), problems)
    return rows
