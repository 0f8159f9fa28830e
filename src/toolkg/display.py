"""Untrusted text made safe for one terminal line, and text tables that align with wide characters.

Names, ids, paths, reasons and evidence come from manifests anyone can write. Printed raw, a tool named
``"x\\nquarantined: none"`` forges a summary line, ``ESC[2J`` clears the screen and U+202E flips what
follows. ``one_line`` shows such characters as escapes instead and changes nothing else:

- newline, carriage return and tab as ``\\n``, ``\\r``, ``\\t``;
- the other C0 controls and DEL as ``\\xNN`` (ESC is ``\\x1b``), the C1 controls as ``\\u0080``-``\\u009f``;
- the Unicode line and paragraph separators (U+2028/9), the bidirectional controls (U+061C, U+200E/F,
  U+202A-202E, U+2066-2069) and lone surrogates (which no encoder accepts) as ``\\uXXXX``.

>>> one_line("x\\nquarantined: none")
'x\\\\nquarantined: none'
>>> print(one_line("a\\tb\\r\\x1b[2J\\x7f\\x85"))
a\\tb\\r\\x1b[2J\\x7f\\u0085
>>> print(one_line("evil\\u202etxt.exe \\ud800 ok"))
evil\\u202etxt.exe \\ud800 ok
>>> one_line("Zürich 東京 — ✓")  # everything printable stays as it is
'Zürich 東京 — ✓'
>>> one_line("abcdefghijklmnop", limit=8)
'abcdefg… (16 chars)'
>>> one_line("ab\\ncdefghij", limit=4)  # an escape is never cut in half
'ab… (11 chars)'

Machine formats keep their meaning and lose the raw characters. In JSON and the RDF syntaxes (N-Triples,
Turtle, JSON-LD) such a character can only stand inside a quoted string or an IRI, where ``\\uXXXX`` means the
same character, so ``escape_quoted`` writes it that way (but tab and newline, which those formats escape in
strings themselves and use to lay out the rest). CSV has no escapes: ``escape_csv`` writes one_line's escapes
instead, but for tab, newline and carriage return, which CSV quotes.

>>> print(escape_quoted('{"d": "a\\x1b[2J\\x85\\u202e"}'))
{"d": "a\\u001b[2J\\u0085\\u202e"}
>>> escape_csv('name\\r\\n"a\\x1b[2J\\tb\\u202e"\\r\\n')
'name\\r\\n"a\\\\x1b[2J\\tb\\\\u202e"\\r\\n'

Tables: ``width`` is the number of terminal columns a (one-line) text takes, ``pad`` and ``clip`` use it.

>>> width("東京"), width("abc"), width("e\\u0301")
(4, 3, 1)
>>> pad("東京", 6) + "|", clip("東京大学", 5)
('東京  |', '東京…')
"""

from __future__ import annotations

import codecs
import re
from typing import BinaryIO

from wcwidth import wcwidth

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNICODE = {0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
# What ``one_line`` escapes but tab and newline, which machine formats (JSON, Turtle, CSV) lay their text out with.
_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(char: str) -> str:
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if 0x80 <= code <= 0x9F or code in _UNICODE or 0xD800 <= code <= 0xDFFF:
        return f"\\u{code:04x}"
    return char


def _unsafe(char: str) -> bool:
    code = ord(char)
    return code < 0x20 or 0x7F <= code <= 0x9F or code in _UNICODE or 0xD800 <= code <= 0xDFFF


def one_line(text: object, limit: int | None = None) -> str:
    """``text`` on one line with its control characters escaped; cut to ``limit`` characters when given
    (the cut ends in '…' followed by the original length)."""
    text = "" if text is None else str(text)
    if not any(_unsafe(c) for c in text):
        pieces: list[str] | str = text
    else:
        pieces = [_escape(c) for c in text]
    if limit is None or sum(len(p) for p in pieces) <= limit:
        return "".join(pieces)
    kept, used = [], 0
    for piece in pieces:
        if used + len(piece) > max(limit - 1, 0):
            break
        kept.append(piece)
        used += len(piece)
    return "".join(kept) + f"… ({len(text)} chars)"


def width(text: str) -> int:
    """Terminal columns of ``text``: 2 for wide (CJK) characters, 0 for combining marks."""
    return sum(max(wcwidth(c), 0) for c in text)


def clip(text: str, columns: int) -> str:
    """``text`` cut to at most ``columns`` terminal columns, ending in '…' when cut."""
    if width(text) <= columns:
        return text
    out, used = [], 0
    for char in text:
        w = max(wcwidth(char), 0)
        if used + w > columns - 1:
            break
        out.append(char)
        used += w
    return "".join(out) + "…"


def pad(text: str, columns: int) -> str:
    """``text`` followed by spaces up to ``columns`` terminal columns (``str.ljust`` counts characters)."""
    return text + " " * max(columns - width(text), 0)


def escape_quoted(text: str) -> str:
    """JSON or RDF text with every raw control, bidi or separator character but tab and newline as ``\\uXXXX``."""
    return _RAW.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def escape_csv(text: str) -> str:
    """CSV text with the raw characters ``one_line`` escapes shown as its escapes, but tab, newline and CR."""
    return _RAW.sub(lambda match: match.group() if match.group() == "\r" else _escape(match.group()), text)


class QuotedEscaper:
    """A binary file-like writer that passes UTF-8 RDF or JSON on to ``out`` through ``escape_quoted``; a
    character split between two writes is escaped whole."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")

    def write(self, data: bytes) -> int:
        self._out.write(escape_quoted(self._decoder.decode(data)).encode("utf-8", "surrogateescape"))
        return len(data)

    def flush(self) -> None:
        self._out.write(escape_quoted(self._decoder.decode(b"", final=True)).encode("utf-8", "surrogateescape"))
        self._out.flush()
