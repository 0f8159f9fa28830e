"""What a request asks for: its clauses, and the needs it implies without naming a tool.

A long request chains several asks ("find the weather in Paris, then book a table"); each is
retrieved on its own (``clauses``). It also carries needs no clause names (``facets``): a file
path to save to needs a tool that writes files, one to read from a tool that reads them, and a
relative time ("tomorrow", "the last 24h") needs today's date. These are English and general
conventions of requests to agents, not any catalog's words.
"""

from __future__ import annotations

import re

# Sentence ends and the conjunctions that chain one request after another.
_CLAUSE = re.compile(
    r"(?<=[.!?;。！？；])\s+|\n+|,\s*(?:and\s+)?then\s+|\s+and then\s+|\s+after that,?\s+|\s+afterwards,?\s+",
    re.IGNORECASE,
)
MIN_CLAUSE_WORDS = 3
# A file-system path: /a/b.ext, ~/a, ./a, C:\a\b.
_PATH = re.compile(r"(?<![\w/:.])(?:~|\.{1,2})?(?:/[\w.\-]+)+/?|\b[A-Za-z]:\\[\w\\.\-]+")
# Words before a path that say the file is written (else it is read, when a read word is there).
_WRITE = re.compile(
    r"\b(?:save[sd]?|saving|write|writes|writing|written|generate[sd]?|export|create[sd]?|output|store|"
    r"put|report|document|markdown)\b",
    re.IGNORECASE,
)
_READ = re.compile(r"\b(?:read|reads|open|load|under|from|convert|analy[sz]e|parse|extract)\b", re.IGNORECASE)
_UNIT = r"(?:h|hours?|days?|weeks?|months?|years?)"
_RELATIVE_TIME = re.compile(
    rf"\b(?:today|tonight|tomorrow|yesterday|now|currently|current (?:date|time|day|{_UNIT})|latest|recent|recently|"
    rf"this (?:week|month|year|morning|afternoon|evening)|next (?:week|month|year|\w+day)|"
    rf"(?:last|past) (?:\d+\s*)?{_UNIT}|\d+\s*{_UNIT} ago|\d+h)\b",
    re.IGNORECASE,
)
PATH_LOOKBACK = 60  # characters before a path read for its verb


def clauses(text: str) -> list[str]:
    """The parts of a multi-intent request, each at least ``MIN_CLAUSE_WORDS`` words.

    >>> clauses("Find the weather in Paris, then book a table nearby. Send me the booking by email.")
    ['Find the weather in Paris', 'book a table nearby', 'Send me the booking by email']
    >>> clauses("What time is it?")
    []
    """
    parts = [p.strip(" ,.;") for p in _CLAUSE.split(text) if p and p.strip(" ,.;")]
    parts = [p for p in parts if len(p.split()) >= MIN_CLAUSE_WORDS]
    return parts if len(parts) > 1 else []


def facets(text: str) -> list[str]:
    """Short requests for the needs a request implies: files it reads or writes, today's date.

    >>> facets("Read the sales in /data/sales.xlsx, plot them by month and save the chart in /out/sales.png")
    ['read a xlsx file at a path', 'write content to a png file at a path']
    >>> facets("Find me a hotel in Paris for tomorrow night")
    ['get the current date and time']
    >>> facets("Summarise this paragraph")
    []
    """
    found = []
    for match in _PATH.finditer(text):
        # imported here: the inference package costs a cold `toolkg retrieve` ~30 ms, and few requests hold a path
        from toolkg.canonicalize.inference.files import FORMATS

        name = match.group(0).rstrip("/").rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
        extension = name.rsplit(".", 1)[-1].lower() if "." in name.strip(".") else ""
        what = f"{FORMATS.get(extension, extension)} file" if extension else "directory"
        before = text[max(0, match.start() - PATH_LOOKBACK) : match.start()]
        if _READ.search(before) and not _WRITE.search(before):
            found.append(f"read a {what} at a path")
        else:
            found.append(f"write content to a {what} at a path")
    if _RELATIVE_TIME.search(text):
        found.append("get the current date and time")
    return list(dict.fromkeys(found))
