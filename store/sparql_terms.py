"""Values written into SPARQL text, for the queries that bind a set of values (a VALUES block) and so cannot use
``substitutions=`` (which binds one value per variable): one way, pyoxigraph's own N-Triples forms.

Why not ``json.dumps``: a JSON string is not a SPARQL literal. It escapes a character outside the Basic
Multilingual Plane (an emoji in a tool's name) as two ``\\uD83D\\uDE00`` surrogate escapes, which Oxigraph's parser
rightly rejects (a SPARQL ``\\u`` escape names a code point, and a surrogate is none), so one such tool stopped
``toolkg mcp`` at start and broke ``/search`` and ``toolkg approve``. ``str(Literal(value))`` escapes exactly what
N-Triples must (quotes, backslashes, line breaks) and keeps every other character as it is; ``str(NamedNode(iri))``
checks the IRI and writes ``<...>``. Both are valid SPARQL terms, whatever the value.

>>> literal('say "hi" 😀')
'"say \\\\"hi\\\\" 😀"'
>>> values_clause("id", ["a::b", "c::d"])
'VALUES ?id { "a::b" "c::d" }'
"""

from __future__ import annotations

from collections.abc import Iterable

from pyoxigraph import Literal, NamedNode


def literal(value: str) -> str:
    """``value`` as a SPARQL string literal (xsd:string)."""
    return str(Literal(value))


def iri(value: str) -> str:
    """``value`` as a SPARQL IRI term; ``ValueError`` if it is not an IRI."""
    return str(NamedNode(value))


def values_clause(variable: str, items: Iterable[str | NamedNode | Literal]) -> str:
    """``VALUES ?variable { ... }`` binding ``variable`` to each of ``items``: a ``str`` as a string literal, a
    pyoxigraph term as itself."""
    return f"VALUES ?{variable} {{ " + " ".join(literal(i) if isinstance(i, str) else str(i) for i in items) + " }"
