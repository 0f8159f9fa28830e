"""Checks on text printed for a terminal: one line per item with no raw control character or forged line, and
tables that fit the window with aligned columns."""

from __future__ import annotations

import re

from toolkg.display import width

ESC, RLO = "\x1b[2J", "\u202e"
FORGED = "quarantined: none"
# Raw control characters a terminal acts on (the newline ending each line is the only one allowed),
# line separators, and the bidirectional controls that reorder what follows.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def assert_one_line_each(text: str, what: str, genuine: int = 0) -> None:
    """No raw control character on any line; ``genuine`` lines saying 'quarantined: none' (the summary's own)."""
    for number, line in enumerate(text.split("\n"), start=1):
        assert not RAW.search(line), f"{what} line {number} holds a raw control character: {line!r}"
    claims = [line for line in text.split("\n") if line.strip().lstrip("- ").startswith(FORGED)]
    assert len(claims) == genuine, f"{what}: forged lines {claims}"


LONG = "Returns the weather forecast for a Japanese city, with rain probability, temperatures and wind " * 3


def second_column(line: str) -> int:
    """The terminal column where a table line's second cell starts (cells are 2+ spaces apart)."""
    gap = re.search(r"\S( {2,})\S", line)
    assert gap, f"no second column in {line!r}"
    return width(line[: gap.end(1)])


def assert_fits(text: str, columns: int, what: str) -> None:
    for line in text.split("\n"):
        assert width(line) <= columns, f"{what}: {width(line)} columns: {line!r}"
