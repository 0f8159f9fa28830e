"""Tools named in a request, as an agent or a user types them: found first, whatever the ranking says.

Agents and their clients write tool names in several forms; each one resolves to stored tool ids:

- an exact tool name (every server's tool of that name) or a stored id ``server::tool``;
- a client's prefixed name: ``mcp__server__tool`` (Claude Code), ``server__tool`` (gateways that
  namespace tools), ``server:tool`` / ``server.tool`` / ``server/tool``;
- ``select:A,B``: several names at once, each in any of these forms, in the order given;
- near-misses of a name: another case, other separators (``get-current-time``, ``GetCurrentTime``), or one
  edit (a typo: a letter missed, added, changed, or two swapped) in a name of five letters or more.

A request with spaces is a name only when it is one but for case and separators (``Book Flight`` names
``book_flight``): typos are looked for only in a request of one or two words, so a sentence never lands
on a tool one edit from it. ``NameIndex.lookup`` returns ``None`` when the request names
no tool: it is then a request for the ranker.

>>> index = NameIndex([("time::get_current_time", "time", "get_current_time"), ("fs::read_file", "fs", "read_file")])
>>> index.lookup("mcp__time__get_current_time"), index.lookup("GetCurrentTime"), index.lookup("raed_file")
(['time::get_current_time'], ['time::get_current_time'], ['fs::read_file'])
>>> index.lookup("select:read_file,time::get_current_time"), index.lookup("what time is it") is None
(['fs::read_file', 'time::get_current_time'], True)
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence

from rapidfuzz import process
from rapidfuzz.distance import OSA

MIN_TYPO_LENGTH = 5  # shorter names are too close to each other for an edit to say which was meant
MAX_TYPO_WORDS = 2  # a name with a space ("bert-base #2") may be misspelt; a longer request is a sentence
_SEPARATORS = re.compile(r"[\s_\-.:/]+")
_SERVER_TOOL = (
    re.compile(r"^mcp__(?P<server>.+?)__(?P<tool>.+)$"),  # Claude Code: mcp__<server>__<tool>
    re.compile(r"^(?P<server>[^:]+?)::(?P<tool>.+)$"),
    re.compile(r"^(?P<server>.+?)__(?P<tool>.+)$"),
    re.compile(r"^(?P<server>[^:./]+)[:./](?P<tool>.+)$"),
)


def name_key(text: str) -> str:
    """A name as compared: lower case, separators dropped (``Get-Current_Time`` -> ``getcurrenttime``)."""
    return _SEPARATORS.sub("", text).casefold()


class NameIndex:
    """The catalog's tool names and ids, for ``lookup``. ``tools``: (id, server id, name) triples;
    ``servers``: (server id, display name) pairs, so a prefix may use either."""

    def __init__(self, tools: Iterable[tuple[str, str, str]], servers: Iterable[tuple[str, str]] = ()) -> None:
        self.ids: set[str] = set()
        self.by_name: dict[str, list[str]] = defaultdict(list)
        self.by_key: dict[str, list[str]] = defaultdict(list)  # name_key(name) -> ids
        self.server_keys: dict[str, set[str]] = defaultdict(set)  # name_key(server id or name) -> server ids
        self.tool_server: dict[str, str] = {}
        for tool_id, server, name in tools:
            self.ids.add(tool_id)
            self.by_name[name].append(tool_id)
            self.by_key[name_key(name)].append(tool_id)
            self.server_keys[name_key(server)].add(server)
            self.tool_server[tool_id] = server
        for server, display in servers:
            self.server_keys[name_key(display)].add(server)
        self.keys: list[str] = sorted(self.by_key)

    def lookup(self, text: str) -> list[str] | None:
        """The tool ids ``text`` names, first named first; ``None`` when it names none."""
        text = text.strip()
        if text.lower().startswith("select:"):
            found: list[str] = []
            for part in text[len("select:") :].split(","):
                for tool_id in self._one(part.strip()) or ():
                    if tool_id not in found:
                        found.append(tool_id)
            return found or None
        return self._one(text)

    def _one(self, text: str) -> list[str] | None:
        if not text:
            return None
        if text in self.ids:
            return [text]
        if text in self.by_name:
            return sorted(self.by_name[text])
        typos = len(text.split()) <= MAX_TYPO_WORDS  # a sentence is never read as a misspelt name
        for pattern in _SERVER_TOOL:
            match = pattern.match(text)
            if match:
                found = self._on_server(match["server"], match["tool"], typos)
                if found:
                    return found
        return self._near(name_key(text), typos) or None

    def _on_server(self, server: str, tool: str, typos: bool) -> list[str]:
        servers = self.server_keys.get(name_key(server))
        if not servers:
            return []
        exact = [t for t in self.by_name.get(tool, ()) if self.tool_server[t] in servers]
        return sorted(exact) or [t for t in self._near(name_key(tool), typos) if self.tool_server[t] in servers]

    def _near(self, key: str, typos: bool) -> list[str]:
        """Ids whose name key is ``key``, else (``typos``) those one edit away, for keys long enough."""
        if not key:
            return []
        if key in self.by_key:
            return sorted(self.by_key[key])
        if not typos or len(key) < MIN_TYPO_LENGTH:
            return []
        close = process.extract(key, self.keys, scorer=OSA.distance, score_cutoff=1, limit=None)
        return sorted(t for found, _, _ in close if len(found) >= MIN_TYPO_LENGTH for t in self.by_key[found])

    def nearest(self, text: str, limit: int = 3) -> list[str]:
        """The ids whose names are closest to ``text`` (a name typed wrong: "did you mean"), nearest first; only
        names within about a third of their length in edits, so a word unlike every name suggests none.

        >>> names = NameIndex([("git::git_commit", "git", "git_commit"), ("git::git_init", "git", "git_init")])
        >>> names.nearest("git_comit"), names.nearest("xyzzy")
        (['git::git_commit'], [])
        """
        key = name_key(text.rpartition("::")[2] if "::" in text else text)
        if not key:
            return []
        close = process.extract(key, self.keys, scorer=OSA.distance, score_cutoff=max(1, len(key) // 3), limit=limit)
        found: list[str] = []
        for name, _, _ in sorted(close, key=lambda c: (c[1], c[0])):
            found += [t for t in sorted(self.by_key[name]) if t not in found]
        return found[:limit]


def first_named(named: Sequence[str], ranked: Sequence[str]) -> list[str]:
    """``named`` first, then ``ranked`` without them."""
    seen = set(named)
    return [*named, *(t for t in ranked if t not in seen)]
