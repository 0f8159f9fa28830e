"""Saved analyst queries: SPARQL files under ``store/queries/`` with a one-line description.

Each file starts with comment lines::

    # The tools of a server: name, description and how many parameters each takes.
    # param server: server id, e.g. filesystem (leave out for every server)
    SELECT ... WHERE { ... ?server ... }

The first line is the description. A ``param`` line names a variable of the query that a caller
may fix: rendering with a value adds ``VALUES ?server { "filesystem" }`` at the top of the
WHERE clause (the value written as an escaped RDF literal, never pasted into the text); without
one the query runs over everything. The same rendering feeds ``toolkg query --saved`` and the
endpoint's UI, which shows the query text so analysts can edit it.

>>> q = saved_query("server-tools")
>>> q.description
'The tools of a server: name, description and how many parameters each takes.'
>>> [p.name for p in q.params]
['server']
>>> 'VALUES ?server { "git" }' in q.render({"server": "git"})
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from toolkg.errors import ConfigError, NotFoundError
from toolkg.ontology import SPARQL_PREFIXES
from toolkg.store.sparql_terms import values_clause

_PARAM = re.compile(r"#\s*param\s+(\w+)\s*:\s*(.*)")
_WHERE = re.compile(r"\bWHERE\s*\{", re.IGNORECASE)


@dataclass(frozen=True)
class QueryParam:
    name: str
    help: str


@dataclass(frozen=True)
class SavedQuery:
    name: str
    description: str
    params: tuple[QueryParam, ...]
    body: str  # the SPARQL after the header comments, without prefixes

    def render(self, values: dict[str, str] | None = None, *, prefixes: bool = True) -> str:
        """The runnable query text, with ``values`` bound; unknown names are a usage error."""
        values = {k: v for k, v in (values or {}).items() if v != ""}
        known = {p.name for p in self.params}
        if unknown := sorted(set(values) - known):
            offered = ", ".join(sorted(known)) or "none"
            raise ConfigError(f"saved query {self.name!r} has no parameter {', '.join(unknown)} (it takes: {offered})")
        body = self.body
        if values:
            clause = " ".join(values_clause(name, [value]) for name, value in sorted(values.items()))
            match = _WHERE.search(body)
            assert match, f"saved query {self.name} has no WHERE clause"
            body = f"{body[: match.end()]}\n  {clause}{body[match.end() :]}"
        header = f"# {self.description}\n" + "".join(f"# param {p.name}: {p.help}\n" for p in self.params)
        return header + (SPARQL_PREFIXES if prefixes else "") + body

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "description": self.description,
            "params": [{"name": p.name, "help": p.help} for p in self.params],
            "query": self.render(),
        }


def _parse(name: str, text: str) -> SavedQuery:
    lines = text.splitlines()
    if not lines or not lines[0].startswith("#"):
        raise ValueError(f"saved query {name} must start with a '# description' line")
    description = lines[0].lstrip("#").strip()
    params = []
    start = 1
    for line in lines[1:]:
        match = _PARAM.match(line)
        if not match:
            break
        params.append(QueryParam(match.group(1), match.group(2).strip()))
        start += 1
    return SavedQuery(name, description, tuple(params), "\n".join(lines[start:]).strip() + "\n")


def saved_queries() -> dict[str, SavedQuery]:
    """Every saved query, by name (the file name without ``.rq``), in name order."""
    folder = resources.files("toolkg.store") / "queries"
    found = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".rq"):
            name = entry.name.removesuffix(".rq")
            found[name] = _parse(name, entry.read_text(encoding="utf-8"))
    return found


def saved_query(name: str) -> SavedQuery:
    queries = saved_queries()
    if name not in queries:
        raise NotFoundError(f"no saved query {name!r}; choose from: {', '.join(queries)}")
    return queries[name]
