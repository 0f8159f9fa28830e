"""Per-tool limits: names that can be stored and called, values trimmed to fit, depth bounded.

Parsers call ``check_depth`` on a raw tool entry before reading it (so a 1,000-level schema is
one quarantined tool, not a crashed run), ``check_name`` on every name they read, and
``fit_tool`` on the parsed tool, which trims what is too long and says what it trimmed.

>>> from toolkg.models import Parameter, Tool
>>> tool = Tool(server_id="s", name="t", description="x" * 100,
...             parameters=(Parameter(name="p", enum=tuple(str(i) for i in range(5))),))
>>> fitted, notes = fit_tool(tool, Limits(max_description_chars=64, max_enum_values=2))
>>> len(fitted.description), fitted.parameters[0].enum, notes
(64, ('0', '1'), ['description trimmed from 100 to 64 characters', "parameter 'p': kept 2 of 5 enum values"])
>>> check_name("get\\tweather", "tool name", "s::#0", Limits())
Traceback (most recent call last):
...
toolkg.errors.ItemError: s::#0: tool name contains a control character (U+0009)
"""

from __future__ import annotations

import re
from typing import Any

from toolkg.errors import ItemError
from toolkg.limits import Limits
from toolkg.models import Tool

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def check_name(name: str, what: str, item: str, limits: Limits) -> str:
    """``name`` stripped, or ``ItemError`` when no client could call it reliably: empty, holding a
    control character or line break, or longer than ``limits.max_name_chars``."""
    name = name.strip()
    if not name:
        raise ItemError(item, f"{what} is empty")
    if found := _CONTROL.search(name):
        raise ItemError(item, f"{what} contains a control character (U+{ord(found.group()):04X})")
    if len(name) > limits.max_name_chars:
        limit = limits.max_name_chars
        raise ItemError(item, f"{what} is {len(name):,} characters, over the {limit} limit (--limit max_name_chars=N)")
    return name


def check_depth(value: Any, item: str, limits: Limits) -> None:
    """``ItemError`` when ``value`` nests deeper than ``limits.max_depth`` (checked without recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limits.max_depth:
            raise ItemError(item, f"nested more than {limits.max_depth} levels deep (--limit max_depth=N)")
        if isinstance(node, dict):
            stack.extend((child, depth + 1) for child in node.values() if isinstance(child, dict | list))
        elif isinstance(node, list):
            stack.extend((child, depth + 1) for child in node if isinstance(child, dict | list))


def _trim(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit]


def fit_tool(tool: Tool, limits: Limits) -> tuple[Tool, list[str]]:
    """``tool`` with descriptions trimmed to ``max_description_chars`` and enums to ``max_enum_values``;
    the second value says what was trimmed (nothing when it fitted)."""
    notes: list[str] = []
    update: dict[str, Any] = {}
    cap = limits.max_description_chars
    if len(tool.description) > cap:
        notes.append(f"description trimmed from {len(tool.description):,} to {cap:,} characters")
        update["description"] = _trim(tool.description, cap)
    parameters = []
    for p in tool.parameters:
        changes: dict[str, Any] = {}
        if len(p.description) > cap:
            notes.append(f"parameter {p.name!r}: description trimmed to {cap:,} characters")
            changes["description"] = _trim(p.description, cap)
        if len(p.enum) > limits.max_enum_values:
            notes.append(f"parameter {p.name!r}: kept {limits.max_enum_values} of {len(p.enum):,} enum values")
            changes["enum"] = p.enum[: limits.max_enum_values]
        if p.default is not None and len(p.default) > cap:
            notes.append(f"parameter {p.name!r}: default value dropped ({len(p.default):,} characters of JSON)")
            changes["default"] = None
        parameters.append(p.model_copy(update=changes) if changes else p)
    if any(a is not b for a, b in zip(parameters, tool.parameters, strict=True)):
        update["parameters"] = tuple(parameters)
    outputs = []
    for o in tool.outputs:
        if len(o.description) > cap:
            notes.append(f"output {o.name!r}: description trimmed to {cap:,} characters")
            o = o.model_copy(update={"description": _trim(o.description, cap)})
        outputs.append(o)
    if any(a is not b for a, b in zip(outputs, tool.outputs, strict=True)):
        update["outputs"] = tuple(outputs)
    return (tool.model_copy(update=update) if update else tool), notes
