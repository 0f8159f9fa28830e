"""A remote SPARQL 1.1 server as the store: Query + Update protocols, and the Graph Store protocol.

A store directory holding ``remote.toml`` keeps its runs, caches and reports locally but its graph on
the server that file names::

    [sparql]
    query = "http://127.0.0.1:7878/query"
    update = "http://127.0.0.1:7878/update"
    graph_store = "http://127.0.0.1:7878/store"    # optional: Graph Store protocol, for replace_graph
    timeout = 120                                     # seconds per request
    # username / password: HTTP basic auth (or TOOLKG_SPARQL_USER / TOOLKG_SPARQL_PASSWORD)

``RemoteBackend`` offers the part of ``pyoxigraph.Store`` that ``ToolStore`` uses, so every command
works on it unchanged. What the server must provide:

- the default graph as the union of the named graphs (toolkg's queries rely on it): Oxigraph
  ``serve --union-default-graph``, Fuseki ``tdb2:unionDefaultGraph true``, Virtuoso and GraphDB by default;
- one SPARQL update request applied atomically (all four do), which is how a manifest's graphs are
  swapped in one transaction here as on disk.

Values bound with ``substitutions`` travel as a ``VALUES`` clause (escaped terms, never pasted text).
Snapshots (``toolkg serve``) are an on-disk feature: a SPARQL server already isolates its readers.
"""

from __future__ import annotations

import base64
import re
import tomllib
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pyoxigraph import (
    NamedNode,
    Quad,
    QueryResultsFormat,
    RdfFormat,
    Triple,
    Variable,
    parse,
    parse_query_results,
    serialize,
)

from toolkg.environment import SPARQL_PASSWORD, SPARQL_USER
from toolkg.errors import ConfigError, StoreError
from toolkg.store.query_guard import with_project_prefixes

CONFIG_FILE = "remote.toml"
_WHERE = re.compile(r"\bWHERE\s*\{", re.IGNORECASE)
_FORM = re.compile(r"\b(SELECT|ASK|CONSTRUCT|DESCRIBE)\b", re.IGNORECASE)
_COMMENT_OR_IRI = re.compile(r"^\s*#[^\n]*$|<[^>\s]*>", re.MULTILINE)


def query_form(query: str) -> str:
    r"""SELECT, ASK, CONSTRUCT or DESCRIBE: the first such keyword outside comments and IRIs.

    >>> query_form("# ask the store to select nothing\nPREFIX s: <http://x/select#>\nASK { ?a ?b ?c }")
    'ASK'
    """
    match = _FORM.search(_COMMENT_OR_IRI.sub(" ", query))
    if not match:
        raise SyntaxError("not a SPARQL query (no SELECT, ASK, CONSTRUCT or DESCRIBE)")
    return match.group(1).upper()


MAX_UPDATE_BYTES = 64 * 1024 * 1024


def remote_config(directory: Path) -> dict[str, object] | None:
    path = directory / CONFIG_FILE
    if not path.exists():
        return None
    try:
        config = tomllib.loads(path.read_text(encoding="utf-8")).get("sparql", {})
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    if not config.get("query") or not config.get("update"):
        raise ConfigError(f"{path}: [sparql] needs query and update endpoint URLs")
    return config


def bind(query: str, substitutions: dict[Variable, object] | None) -> str:
    r"""Put bound values into the query as a VALUES clause at the top of its (outer) WHERE.

    >>> from pyoxigraph import Literal
    >>> print(bind('SELECT ?t WHERE { ?t <http://x/name> ?name }', {Variable("name"): Literal('say "hi"')}))
    SELECT ?t WHERE { VALUES (?name) { ("say \"hi\"") }  ?t <http://x/name> ?name }
    """
    if not substitutions:
        return query
    names = " ".join(f"?{v.value}" for v in substitutions)
    values = " ".join(str(t) for t in substitutions.values())  # N-Triples forms: escaped
    match = _WHERE.search(query)
    if not match:
        raise ValueError("substitutions need a WHERE clause")
    return f"{query[: match.end()]} VALUES ({names}) {{ ({values}) }} {query[match.end() :]}"


class RemoteBackend:
    """SPARQL 1.1 protocol client: the ``Backend`` protocol (store/backends.py) over HTTP."""

    publishes_snapshots = False  # the server isolates its own readers

    def __init__(self, config: dict[str, object]) -> None:
        self.query_url = str(config["query"])
        self.update_url = str(config["update"])
        self.graph_store_url = str(config.get("graph_store") or "")
        self.timeout = float(str(config.get("timeout", 120)))  # a number or its text, as the config file has it
        user = config.get("username") or SPARQL_USER.raw()
        password = config.get("password") or SPARQL_PASSWORD.get()
        self.headers = {}
        if user:
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            self.headers["Authorization"] = f"Basic {token}"
        self.query("ASK {}")  # fail now, in one line, if the server is not there

    def _send(self, url: str, data: bytes | None, headers: dict[str, str], method: str = "POST") -> bytes:
        """The response body; a refused request is a StoreError (a SyntaxError for 400: bad SPARQL, as locally)."""
        request = urllib.request.Request(url, data=data, method=method, headers={**self.headers, **headers})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            lines = exc.read().decode(errors="replace").strip().splitlines()
            detail = lines[0] if lines else exc.reason
            if exc.code == 400:
                raise SyntaxError(detail) from None
            raise StoreError(f"SPARQL server {url} answered {exc.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise StoreError(f"SPARQL server {url} unreachable: {reason}") from None

    # --- the pyoxigraph.Store surface ------------------------------------------------------

    def query(self, query: str, use_default_graph_as_union: bool = True, substitutions=None, prefixes=None):
        # A server takes no prefixes beside the text: those used undeclared go on the first line, so error
        # lines stay the user's (columns on that line move).
        text = (
            with_project_prefixes(bind(query, substitutions), prefixes=prefixes)
            if prefixes
            else bind(query, substitutions)
        )
        form = query_form(text)
        accept = "application/n-triples" if form in ("CONSTRUCT", "DESCRIBE") else "application/sparql-results+json"
        body = self._send(
            self.query_url,
            urllib.parse.urlencode({"query": text}).encode(),
            {"Content-Type": "application/x-www-form-urlencoded", "Accept": accept},
        )
        if form in ("CONSTRUCT", "DESCRIBE"):
            return list(parse(body, format=RdfFormat.N_TRIPLES))
        return parse_query_results(body, format=QueryResultsFormat.JSON)

    def update(self, update: str) -> None:
        data = urllib.parse.urlencode({"update": update}).encode()
        if len(data) > MAX_UPDATE_BYTES:
            raise StoreError(f"one update of {len(data) // 2**20} MiB is over the {MAX_UPDATE_BYTES // 2**20} MiB cap")
        self._send(self.update_url, data, {"Content-Type": "application/x-www-form-urlencoded"})

    def extend(self, quads: Iterable[Quad]) -> None:
        """All quads in one INSERT DATA: one request, so one transaction on the server."""
        by_graph: dict[object, list[str]] = {}
        for q in quads:
            by_graph.setdefault(q.graph_name, []).append(f"{q.subject} {q.predicate} {q.object} .")
        blocks = [f"GRAPH {g} {{\n" + "\n".join(lines) + "\n}" for g, lines in by_graph.items()]
        if blocks:
            self.update("INSERT DATA {\n" + "\n".join(blocks) + "\n}")

    def quads_for_pattern(self, subject, predicate, obj, graph):
        terms = [t if t is not None else f"?{n}" for t, n in ((subject, "s"), (predicate, "p"), (obj, "o"))]
        g = graph if graph is not None else "?g"
        rows = self.query(f"SELECT * WHERE {{ GRAPH {g} {{ {terms[0]} {terms[1]} {terms[2]} }} }}")
        for row in rows:
            s = subject if subject is not None else row["s"]
            p = predicate if predicate is not None else row["p"]
            o = obj if obj is not None else row["o"]
            yield Quad(s, p, o, graph if graph is not None else row["g"])

    def named_graphs(self):
        return [row["g"] for row in self.query("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")]

    def contains_named_graph(self, graph: NamedNode) -> bool:
        return bool(self.query(f"ASK {{ GRAPH {graph} {{ ?s ?p ?o }} }}"))

    def __len__(self) -> int:
        rows = list(self.query("SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"))
        return int(rows[0]["n"].value)

    def __iter__(self):
        return iter(self.quads_for_pattern(None, None, None, None))

    def dump(self, output, format: RdfFormat) -> None:
        serialize(list(self), output, format=format)

    def write_new(self, quads: Iterable[Quad], count: int) -> None:
        self.extend(quads)

    def replace_graph(self, graph: NamedNode, triples: Sequence[Triple]) -> None:
        """One Graph Store protocol PUT when configured (one request replaces the graph), else one update."""
        body = "\n".join(f"{t.subject} {t.predicate} {t.object} ." for t in triples)
        if not self.graph_store_url:
            self.update(f"DROP SILENT GRAPH {graph} ; INSERT DATA {{ GRAPH {graph} {{\n{body}\n}} }}")
            return
        url = f"{self.graph_store_url}?{urllib.parse.urlencode({'graph': graph.value})}"
        self._send(url, body.encode(), {"Content-Type": "application/n-triples"}, method="PUT")

    def export_order(self, data: Iterable[Any]) -> list[Any]:
        """A SPARQL server returns them in no particular order: grouped, the output is shorter."""
        return sorted(data, key=lambda q: (str(getattr(q, "graph_name", "")), str(q.subject), str(q.predicate)))

    def close(self) -> None:  # each request is its own connection
        pass

    def backup(self, target: str) -> None:
        raise StoreError("snapshots are for on-disk stores; a SPARQL server isolates its own readers")
