"""``/resource?iri=IRI``: one page per IRI of the store, written by the endpoint (no script on it).

What the store says about the IRI: the triples it is the subject of (labels first, then its types, then the
rest by predicate), and those it is the object of, each with the graphs that hold it. Every IRI on the page
links to its own page here, never out (the store's IRIs are under w3id.org, which knows nothing of this
store); a blank node is shown as text (its label is not stable from one query to the next).

Everything shown comes from catalogs: it is escaped (``html.escape``) and never put in an attribute but as
escaped text or a ``/resource?iri=`` link with the IRI percent-encoded, so a ``javascript:`` IRI is a page
about that IRI, not a script. The page carries the strict policy (``page_policy.STRICT_POLICY``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from urllib.parse import quote

from toolkg.display import one_line
from toolkg.ontology import TK_NS
from toolkg.ontology.docs import compact_iri, iri_prefixes

Select = Callable[[str], list[dict[str, dict[str, str]]]]  # a SELECT -> SPARQL JSON bindings

MAX_ROWS = 500  # triples shown each way; the rest are counted and left to the query editor
MAX_IRI_CHARS = 4096
# An IRI that can sit between < and > in SPARQL (the IRIREF production) and has a scheme.
_IRI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:[^<>\"{}|^`\\\x00-\x20]*")
_RDF, _RDFS = "http://www.w3.org/1999/02/22-rdf-syntax-ns#", "http://www.w3.org/2000/01/rdf-schema#"
# What names a thing for a person, in the order a heading takes it.
LABELS = (
    _RDFS + "label",
    "http://www.w3.org/2004/02/skos/core#prefLabel",
    "https://w3id.org/toolkg/ontology#name",
    "https://w3id.org/toolkg/ontology#identifier",
    "http://purl.org/dc/terms/title",
)
DESCRIPTIONS = ("http://purl.org/dc/terms/description", _RDFS + "comment")


class BadIri(ValueError):
    """The ``iri`` parameter is not an IRI the page can be about (the message is one line)."""


def checked_iri(value: str) -> str:
    if not value:
        raise BadIri("resource needs ?iri=IRI (an absolute IRI, e.g. one from a query's results)")
    if len(value) > MAX_IRI_CHARS:
        raise BadIri(f"the IRI is longer than {MAX_IRI_CHARS} characters")
    if not _IRI.fullmatch(value):
        raise BadIri(f'not an absolute IRI: {one_line(value, 120)} (a scheme, then no spaces, <, >, " or braces)')
    return value


def resource_href(iri: str) -> str:
    return "/resource?iri=" + quote(iri, safe="")


@dataclass
class Statement:
    predicate: str
    term: dict[str, str]  # the other end: SPARQL JSON (type, value, datatype, xml:lang)
    graphs: list[str] = field(default_factory=list)


@dataclass
class Resource:
    iri: str
    outgoing: list[Statement]
    incoming: list[Statement]
    more_outgoing: bool
    more_incoming: bool
    labels: dict[str, str]  # IRI on the page -> its label, where the store has one
    definition: str = ""  # a tk: term's anchor on the ontology page (/ontology#...)

    @property
    def known(self) -> bool:
        """Whether there is anything to show: triples, or the term's definition."""
        return bool(self.outgoing or self.incoming or self.definition)


def read_resource(iri: str, select: Select) -> Resource:
    """What the store says about ``iri`` (already ``checked_iri``), in three queries."""
    limit = MAX_ROWS + 1
    out = select(f"SELECT ?p ?o ?g WHERE {{ GRAPH ?g {{ <{iri}> ?p ?o }} }} ORDER BY ?p ?o ?g LIMIT {limit * 4}")
    inc = select(f"SELECT ?s ?p ?g WHERE {{ GRAPH ?g {{ ?s ?p <{iri}> }} }} ORDER BY ?p ?s ?g LIMIT {limit * 4}")
    outgoing = _fold([(r["p"]["value"], r["o"], r["g"]["value"]) for r in out])
    incoming = _fold([(r["p"]["value"], r["s"], r["g"]["value"]) for r in inc])
    outgoing.sort(key=_order)
    seen = {iri} | {s.term["value"] for s in outgoing + incoming if s.term["type"] == "uri"}
    seen |= {s.predicate for s in outgoing + incoming}
    seen = {i for i in seen if _IRI.fullmatch(i)}  # each goes between < and > in the labels' query
    return Resource(
        iri,
        outgoing[:MAX_ROWS],
        incoming[:MAX_ROWS],
        len(outgoing) > MAX_ROWS or len(out) == limit * 4,
        len(incoming) > MAX_ROWS or len(inc) == limit * 4,
        _labels(sorted(seen)[:1000], select),
        _definition(iri),
    )


def _definition(iri: str) -> str:
    if not iri.startswith(TK_NS):
        return ""
    from toolkg.ontology.docs import ontology_anchors  # the ontology page: pyLODE, once per process

    return ontology_anchors().get(iri, "")


def _fold(rows: list[tuple[str, dict[str, str], str]]) -> list[Statement]:
    """One statement per (predicate, term), with every graph that holds it."""
    folded: dict[tuple, Statement] = {}
    for predicate, term, graph in rows:
        key = (predicate, tuple(sorted(term.items())))
        folded.setdefault(key, Statement(predicate, term)).graphs.append(graph)
    return list(folded.values())


def _order(statement: Statement) -> tuple[int, str, str]:
    p = statement.predicate
    rank = LABELS.index(p) if p in LABELS else len(LABELS) + (0 if p == _RDF + "type" else 1 + (p not in DESCRIPTIONS))
    return rank, p, statement.term["value"]


def _labels(iris: list[str], select: Select) -> dict[str, str]:
    if not iris:
        return {}
    values = " ".join(f"<{i}>" for i in iris)
    names = " ".join(f"<{p}>" for p in LABELS)
    rows = select(
        f"SELECT ?s ?p (MIN(STR(?l)) AS ?label) WHERE {{ VALUES ?s {{ {values} }} VALUES ?p {{ {names} }} "
        "?s ?p ?l FILTER(isLiteral(?l)) } GROUP BY ?s ?p"
    )
    best: dict[str, tuple[int, str]] = {}
    for row in rows:
        rank = LABELS.index(row["p"]["value"])
        if row["s"]["value"] not in best or rank < best[row["s"]["value"]][0]:
            best[row["s"]["value"]] = (rank, row["label"]["value"])
    return {iri: label for iri, (_, label) in best.items()}


def _iri_html(iri: str, labels: dict[str, str], prefixes: dict[str, str]) -> str:
    short = compact_iri(iri, prefixes)
    label = labels.get(iri)
    shown = escape(one_line(short, 200))
    if label and label != short.partition(":")[2]:
        shown = f'{escape(one_line(label, 120))} <span class="iri">{shown}</span>'
    return f'<a href="{escape(resource_href(iri))}" title="{escape(iri)}">{shown}</a>'


def _term_html(term: dict[str, str], labels: dict[str, str], prefixes: dict[str, str]) -> str:
    if term["type"] == "uri":
        return _iri_html(term["value"], labels, prefixes)
    if term["type"] == "bnode":
        return f'<span class="bnode">_:{escape(term["value"])}</span>'
    text = f'<span class="literal">{escape(term["value"])}</span>'
    if lang := term.get("xml:lang"):
        return text + f' <span class="tag">@{escape(lang)}</span>'
    if (datatype := term.get("datatype")) and not datatype.endswith("#string"):
        return text + f' <span class="tag">{escape(compact_iri(datatype, prefixes))}</span>'
    return text


def _table(statements: list[Statement], other: str, resource: Resource, prefixes: dict[str, str]) -> str:
    rows = []
    for s in statements:
        graphs = ", ".join(_iri_html(g, {}, prefixes) for g in s.graphs)
        cells = [_iri_html(s.predicate, resource.labels, prefixes), _term_html(s.term, resource.labels, prefixes)]
        if other == "subject":
            cells.reverse()
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + f'<td class="graphs">{graphs}</td></tr>')
    head = ["property", "value"] if other == "value" else ["subject", "property"]
    header = "".join(f"<th>{h}</th>" for h in (*head, "graphs"))
    return f"<table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def resource_html(resource: Resource) -> str:
    prefixes = iri_prefixes()
    iri = resource.iri
    title = resource.labels.get(iri) or compact_iri(iri, prefixes)
    parts = [
        f'<h1>{escape(one_line(title, 200))}</h1><p class="iri-line"><code>{escape(iri)}</code></p>',
    ]
    if resource.definition:
        href = escape("/ontology#" + quote(resource.definition, safe=""))
        parts.append(f'<p class="term">A term of the ontology: <a href="{href}">its definition</a>.</p>')
    if not resource.outgoing and not resource.incoming:
        parts.append('<p class="empty">The store holds no triple about this IRI.</p>')
    for statements, more, heading, other in (
        (resource.outgoing, resource.more_outgoing, "What it says", "value"),
        (resource.incoming, resource.more_incoming, "What points to it", "subject"),
    ):
        if not statements:
            continue
        parts.append(f"<h2>{heading} ({len(statements)}{'+' if more else ''})</h2>")
        parts.append(_table(statements, other, resource, prefixes))
        if more:
            parts.append(f'<p class="more">Only the first {MAX_ROWS} are shown: ask the rest in the query editor.</p>')
    return page(one_line(title, 120), "".join(parts))


def page(title: str, body: str) -> str:
    """The frame of a page the endpoint writes: the UI's links, the page's style sheet, no script."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<title>{escape(title)} · toolkg</title><link rel="stylesheet" href="/resource.css">'
        '<link rel="icon" type="image/svg+xml" href="/logo.svg"></head><body>'
        '<header><a class="home" href="/">toolkg</a> <nav><a href="/">query editor</a> <a href="/ontology">ontology'
        '</a> <a href="/status">status</a></nav></header>'
        f"<main>{body}</main></body></html>\n"
    )
