"""The one way a failure becomes a quarantine entry: a reason of one line, the raw input capped.

Every stage (read, parse, extract, canonicalize, validate, load, infer, link, snapshot) turns a
failure of one item into a ``QuarantinedItem`` through ``quarantine`` and goes on with the next
item. A failure toolkg anticipated (a ``ToolkgError``) reads as its own message; anything else
reads ``internal error: Type: message`` and its traceback is logged on the ``toolkg`` logger at
debug level, which ``toolkg build -v`` prints.

>>> reason_of(ValueError("bad\\nthing"))
'internal error: ValueError: bad thing'
>>> reason_of(RecursionError("maximum recursion depth exceeded"))
'nested too deeply to process (maximum recursion depth exceeded)'
>>> from toolkg.errors import ItemError
>>> quarantine(ItemError("s::t", "tool name is empty"), source="a.json", item="s::t", stage="parse").reason
'tool name is empty'
"""

from __future__ import annotations

import logging
from typing import Any

from toolkg.disk import is_disk_full
from toolkg.errors import ItemError, ManifestError, ToolkgError
from toolkg.models import MAX_REASON_CHARS, QuarantinedItem, one_line_text

log = logging.getLogger("toolkg")


def reason_of(exc: BaseException, context: str = "internal error") -> str:
    """One readable line saying why ``exc`` happened (``context`` says what failed, for an exception
    toolkg did not raise itself)."""
    if isinstance(exc, ItemError | ManifestError):
        text = exc.reason
    elif isinstance(exc, ToolkgError):
        text = str(exc)
    elif isinstance(exc, RecursionError):
        text = f"nested too deeply to process ({exc})"
    elif isinstance(exc, MemoryError):
        text = "ran out of memory (see the limits in 'toolkg build --help')"
    else:
        text = f"{context}: {type(exc).__name__}: {exc}"
    return one_line_text(text, MAX_REASON_CHARS)


def quarantine(
    exc: BaseException, *, source: str, item: str, stage: str, raw: Any = None, context: str = "internal error"
) -> QuarantinedItem:
    """The quarantine entry for ``exc``; an unexpected one also logs its traceback (``-v`` shows it).

    A full disk is re-raised instead: it is the machine's failure, not the item's, and every later item
    would fail the same way, so it stops the run (``toolkg.disk``)."""
    if is_disk_full(exc):
        raise exc
    if not isinstance(exc, ToolkgError):
        log.debug("%s: %s: [%s] unexpected failure", source, item, stage, exc_info=exc)
    reason = reason_of(exc, context)
    return QuarantinedItem(source=source, item=item, stage=stage, reason=reason, raw=raw_text(raw))


def raw_text(raw: Any, limit: int = 2000) -> str:
    """The offending input for the quarantine file, at most ``limit`` characters (never the whole
    of a huge or self-referencing value)."""
    if raw is None:
        return ""
    if isinstance(raw, bytes):
        return raw[: limit * 4].decode("utf-8", errors="replace")[:limit]
    if isinstance(raw, str):
        return raw[:limit]
    return bounded_json(raw, limit)


def bounded_json(value: Any, limit: int = 2000) -> str:
    """JSON text of ``value`` cut at ``limit`` characters, written without recursion and without
    expanding more than it prints: safe on a 1,000-level nesting, a YAML alias bomb or a cycle.

    >>> bounded_json({"a": [1, "x", None, True, 1.5]})
    '{"a": [1, "x", null, true, 1.5]}'
    >>> deep = []
    >>> for _ in range(5000):
    ...     deep = [deep]
    >>> bounded_json(deep, 12)
    '[[[[[[[[[[[[...'
    """
    out: list[str] = []
    size = 0
    stack: list[Any] = [value]
    while stack and size <= limit:
        node = stack.pop()
        if isinstance(node, _Token):
            piece = node.text
        elif isinstance(node, dict):
            piece = "{"
            items: list[Any] = [_Token("}")]
            pairs = list(node.items())[:limit]
            for index, (key, child) in enumerate(reversed(pairs)):
                items.append(child)
                items.append(_Token(("" if index == len(pairs) - 1 else ", ") + _scalar(str(key)) + ": "))
            stack.extend(items)
        elif isinstance(node, list | tuple | set | frozenset):
            piece = "["
            children = list(node)[:limit]
            items = [_Token("]")]
            for index, child in enumerate(reversed(children)):
                items.append(child)
                if index < len(children) - 1:
                    items.append(_Token(", "))
            stack.extend(items)
        else:
            piece = _scalar(node)
        out.append(piece)
        size += len(piece)
    text = "".join(out)
    return text if size <= limit and not stack else text[:limit] + "..."


class _Token:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _scalar(value: Any) -> str:
    import json

    if value is None or isinstance(value, bool | int | float | str):
        try:
            return json.dumps(value, ensure_ascii=False, allow_nan=True)
        except ValueError:  # an integer past Python's digit limit
            return '"<number too long>"'
    return json.dumps(str(value), ensure_ascii=False)


class InjectedFault(RuntimeError):
    """Raised by ``fault_point`` for ``TOOLKG_FAULT=raise:<point>``."""


def fault_point(name: str) -> None:
    """A test hook for failure handling: ``TOOLKG_FAULT=kill:<name>`` makes the process kill itself
    with SIGKILL right here, as ``kill -9`` or a power cut would (no cleanup runs);
    ``TOOLKG_FAULT=raise:<name>`` raises an unexpected error here; ``TOOLKG_FAULT=fill:<name>`` fills the
    disk here: it writes the file ``$TOOLKG_FAULT_FILL`` (on a test's small tmpfs) until the file system is
    full, so every later write meets a real ENOSPC, or without that variable raises ENOSPC itself. The build
    passes a point at every stage boundary (ingest, load, loaded, canonicalize, infer, link, snapshot, and
    before-<stage> ahead of each catalog-wide stage) and one per manifest it transforms (transform). Used by
    tests/e2e/test_crash_consistency.py, tests/e2e/test_build_faults.py and
    tests/integration/test_hostile_manifests.py; unset, it costs one lookup."""
    import os

    from toolkg.environment import FAULT

    fault = FAULT.raw()
    if not fault or fault.partition(":")[2] != name:
        return
    if fault.startswith("kill:"):
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
    if fault.startswith("raise:"):
        raise InjectedFault(f"fault injected at {name} (TOOLKG_FAULT)")
    if fault.startswith("fill:"):
        _fill_disk(name)


def _fill_disk(name: str) -> None:
    import errno

    from toolkg.environment import FAULT_FILL

    filler = FAULT_FILL.raw()
    if not filler:
        raise OSError(errno.ENOSPC, f"No space left on device (TOOLKG_FAULT at {name})", name)
    try:
        with open(filler, "ab", buffering=0) as out:
            while True:
                out.write(b"\0" * (1 << 16))
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
