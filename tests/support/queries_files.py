"""Queries files for `retrieve --queries` and `eval`: a valid line, malformed lines with the one-line problem each
must produce, and a file mixing the two."""

from __future__ import annotations

import json
from pathlib import Path

GOOD = {"id": "w", "query": "weather in Paris", "steps": [], "gold_tools": ["get_weather"]}
MALFORMED = {  # what each case's one line must say
    b'{"id": "a", "query": "q", "steps": 5}': "steps: expected a list of strings, got a number",
    b'{"id": "b", "query": "caf\xe9 \xff"}': "not UTF-8 (byte 0xe9 at column 26)",
    b'{"id": "c", "query": "q", "gold_tools": 5}': "gold_tools: expected a list of strings, got a number",
    b"[{}]": "expected a JSON object, got an array",
    b'{"id": "e", "query": "q", "gold_tools": ["x"], "gold_tool_alternatives": ["y"]}': (
        "gold_tool_alternatives: expected an object of {gold: [ids]}, got an array"
    ),
    b'{"id": "f", "query": "q", "steps": "abc"}': "steps: expected a list of strings, got a string",
    b'{"id": "g", "query": "q", "steps": ["ok", 3]}': "steps: expected a list of strings, but steps[1] is a number",
    b'{"id": "h", "query": 7}': "query: expected a string, got a number",
    b'{"id": "i", "query": "q", "gold_tools": ["x"]': "not JSON: Expecting ',' delimiter at column 46",
}


def queries_file(folder: Path, *bad: bytes, good: int = 2) -> Path:
    """``good`` valid lines, then the malformed ones, then one more valid line and a blank one."""
    lines = [json.dumps({**GOOD, "id": f"w{n}"}).encode() for n in range(good)]
    lines += list(bad) + [json.dumps({**GOOD, "id": "last"}).encode(), b"   "]
    path = folder / "q.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path
