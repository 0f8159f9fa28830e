"""Checks a SPARQL query before it reaches Oxigraph: size, nesting, complexity, federation, updates.

Oxigraph parses and plans a query recursively, so a query of a few kilobytes can overflow its stack and end
the process: 4,000 nested ``{`` (a 16 KB POST) kill ``oxigraph serve``, and a few hundred ``;`` or
``OPTIONAL`` kill an in-process ``toolkg query``. A query never needs that shape, so the guard refuses it
before it is parsed, with a one-line reason. What it counts is measured, not guessed:
``benchmarks/query_guard_bench.py`` finds, per shape, the size at which Oxigraph crashes (in-process and
served), and the limits below stay several times under the lowest of them (see ``QueryLimits``).

It is a lexer, not a parser: strings, IRIs and comments are skipped whole (so ``"{{{"`` in a string
counts nothing) and everything else is counted by token. It also finds the prefixes a query declares, so
the project's own (``toolkg.ontology.PREFIXES``) can be added where a query uses them undeclared.

>>> shape = check_query("SELECT * WHERE { ?s a tk:Tool OPTIONAL { ?s tk:name ?n } }")
>>> shape.depth, shape.complexity, shape.update
(2, 5, False)
>>> try:
...     check_query("SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }")
... except QueryRefused as refused:
...     print(refused.status, refused)
403 SERVICE (federated query) is refused: it would fetch from any URL it names (--allow-federation)
"""

from __future__ import annotations

import difflib
import re
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from toolkg.errors import RequestError
from toolkg.ontology import PREFIXES

_TOKEN = re.compile(
    r"""
      (?P<space>\s+)
    | (?P<comment>\#[^\r\n]*)
    | (?P<string>\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"|'''(?:[^'\\]|\\.|'(?!''))*'''
                |"(?:[^"\\\n\r]|\\.)*"|'(?:[^'\\\n\r]|\\.)*')
    | (?P<iri><(?:[^<>"{}|^`\\\x00-\x20]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})*>)
    | (?P<var>[?$][\w\u00b7\u0300-\u036f\u203f-\u2040]+)
    | (?P<lang>@[A-Za-z]+(?:-[A-Za-z0-9]+)*)
    | (?P<number>\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)
    | (?P<name>(?:[^\W\d]|_)[\w\-.]*(?<!\.)(?::(?:[\w\-.:%]|\\.)*(?<!\.))?|:(?:[\w\-.:%]|\\.)*(?<!\.))
    | (?P<op>\|\||&&|!=|<=|>=|\^\^|[{}()\[\],;.*/+\-!<>=|^])
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_OPEN, _CLOSE = "{([", "})]"
# Keywords that each add a node (and often a level of recursion) to the query's algebra.
LARGE_STACK_BYTES = 512 * 1024 * 1024  # address space reserved, not memory used, until a query recurses into it
T = TypeVar("T")
_CLAUSES = frozenset({"OPTIONAL", "UNION", "MINUS", "FILTER", "BIND", "EXISTS", "SERVICE", "GRAPH", "SELECT", "VALUES"})
_UPDATE = frozenset({"INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH"})


class QueryRefused(RequestError):
    """A query the guard will not pass on; ``status`` is the HTTP answer the endpoint gives."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class QueryLimits:
    """What a query may be. The defaults stay far under the smallest crash measured (see module doc).

    ``max_depth``: brackets open at once. Oxigraph survives a few hundred levels in the worst shape
    measured (``FILTER NOT EXISTS {`` nested); no query written by hand nests 64.
    ``max_complexity``: operators, separators, clauses and brackets counted over the whole query. The
    cheapest crash measured is a flat list of about 300 (in-process ``;``), which ``toolkg query`` and
    ``toolkg mcp`` avoid by running queries on a large stack; the served Oxigraph survives ~6,000.
    """

    max_bytes: int = 64 * 1024
    max_depth: int = 64
    max_complexity: int = 1000
    allow_service: bool = False
    allow_update: bool = False


DEFAULT_LIMITS = QueryLimits()


@dataclass
class QueryShape:
    size: int
    depth: int = 0
    complexity: int = 0
    update: bool = False
    service: bool = False
    stray_backslash: bool = False  # outside strings, IRIs and names
    declared: set[str] = field(default_factory=set)
    used: set[str] = field(default_factory=set)


def _tokens(text: str):
    """(kind, value, offset) for every token but spaces and comments, with ``<`` read as Oxigraph may read it.

    ``<`` opens an IRI, except inside an expression after an operand, where it is "less than": there
    ``(?x<1-1-1)>(0)`` is a comparison around a chain of subtractions, not the IRI ``<1-1-1)>``. Reading it as
    an IRI would hide the chain (and any parentheses in it) from the counts. Expressions live in parentheses,
    so inside ``(`` a ``<`` is an IRI only where an operand is expected (after ``(``, ``,`` or an operator) and
    "less than" everywhere else: erring that way only counts more (a VALUES row ``(<a> <b>)`` counts its
    second IRI as tokens). Within such a would-be IRI, ``#`` and quotes are single characters, not the start
    of a comment or string, in case Oxigraph does read it as an IRI."""
    brackets: list[str] = []
    pos, expects_operand, plain_until = 0, True, 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        assert match is not None, "_TOKEN's last alternative matches any one character"
        kind, value = match.lastgroup, match.group()
        if pos < plain_until and kind in ("comment", "string"):
            kind, value = "other", text[pos]
        if kind == "iri" and brackets and brackets[-1] == "(" and not expects_operand:
            plain_until = pos + len(value)
            kind, value = "op", "<=" if text.startswith("<=", pos) else "<"
        start, pos = pos, pos + len(value)
        if kind in ("space", "comment"):
            continue
        if kind == "op" and value in _OPEN:
            brackets.append(value)
        elif kind == "op" and value in _CLOSE and brackets:
            brackets.pop()
        expects_operand = kind == "op" and value not in (")", "]")
        yield kind, value, start


def measure(text: str) -> QueryShape:
    """Count what the guard limits, without refusing anything."""
    shape = QueryShape(size=len(text.encode("utf-8", "surrogatepass")))
    depth = 0
    first_keyword = True
    expect_prefix = False
    for kind, value, _ in _tokens(text):
        shape.stray_backslash |= kind == "other" and value == "\\"
        if expect_prefix and kind == "name":
            shape.declared.add(value.split(":", 1)[0])
            expect_prefix = False
            continue
        expect_prefix = False
        if kind == "name":
            upper = value.upper()
            if ":" in value:
                shape.used.add(value.split(":", 1)[0])
            elif upper == "PREFIX":
                expect_prefix = True
                continue
            elif upper == "BASE":
                continue
            if first_keyword:
                first_keyword = False
                shape.update = upper in _UPDATE
            if upper in _CLAUSES:
                shape.complexity += 1
                shape.service |= upper == "SERVICE"
        elif kind == "op":
            if value in _CLOSE:  # the open bracket was counted
                depth = max(0, depth - 1)
                continue
            shape.complexity += 1
            if value in _OPEN:
                depth += 1
                shape.depth = max(shape.depth, depth)
    return shape


def check_query(text: str, limits: QueryLimits = DEFAULT_LIMITS) -> QueryShape:
    """The query's shape, or ``QueryRefused`` with a one-line reason and the HTTP status to answer."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limits.max_bytes:
        raise QueryRefused(f"query too large: {size:,} bytes (at most {limits.max_bytes:,})", 413)
    # SPARQL allows \uXXXX anywhere, decoded before parsing; Oxigraph 0.5 decodes it only inside IRIs and
    # strings. Outside them it has no use, and a parser that did decode it would see structure the guard did not.
    shape = measure(text)
    if shape.stray_backslash:
        raise QueryRefused("a backslash outside strings, IRIs and names is refused (\\u escapes belong inside them)")
    if shape.update and not limits.allow_update:
        raise QueryRefused("SPARQL updates are refused: this endpoint is read-only", 403)
    if shape.service and not limits.allow_service:
        raise QueryRefused(
            "SERVICE (federated query) is refused: it would fetch from any URL it names (--allow-federation)",
            403,
        )
    if shape.depth > limits.max_depth:
        raise QueryRefused(f"query nested too deeply: {shape.depth} levels of brackets (at most {limits.max_depth})")
    if shape.complexity > limits.max_complexity:
        raise QueryRefused(
            f"query too complex: {shape.complexity:,} operators, patterns and clauses "
            f"(at most {limits.max_complexity:,})"
        )
    return shape


def undefined_prefix(text: str, predefined: Collection[str] = PREFIXES) -> tuple[str, int, int] | None:
    r"""The first prefix ``text`` uses undeclared (other than ``predefined``): (prefix, line, column), both from 1.

    >>> undefined_prefix("PREFIX ex: <urn:ex#>\nSELECT * { ?s ex:p ?o ; tk:name ?n ;\n  foaf:name ?f ; dc:x ?d }")
    ('foaf', 3, 3)
    """
    declared, expect_prefix = set(predefined), False
    for kind, value, start in _tokens(text):
        prefix = value.split(":", 1)[0]
        if expect_prefix and kind == "name":
            declared.add(prefix)
        elif kind == "name" and ":" in value and prefix not in declared:
            line_start = text.rfind("\n", 0, start) + 1
            return prefix, text.count("\n", 0, start) + 1, start - line_start + 1
        expect_prefix = kind == "name" and value.upper() == "PREFIX"
    return None


_POSITION = re.compile(r"error at (\d+):(\d+): ")


def syntax_error_line(error: BaseException | str, text: str, predefined: Collection[str] = PREFIXES) -> str:
    r"""Oxigraph's SyntaxError about ``text`` as one line: ``invalid SPARQL: error at LINE:COLUMN: ...``.

    The position is Oxigraph's, in the text it parsed: callers hand it the user's text unchanged (the project's
    prefixes go in through ``prefixes=``, not as lines in front), so it points into the user's query. An
    undeclared prefix gets whatever Oxigraph expected at the point it gave up (a dump of the grammar's character
    classes over several lines, or "expected OPTIONAL"): when the query uses one before that point, the line
    names it, where it is, and the predefined prefix it is closest to, if any.

    >>> syntax_error_line("error at 1:24: expected one of Prefix not found, ['%'],\n['.']", "ASK { ?s tks:name ?o }")
    "invalid SPARQL: error at 1:10: undefined prefix 'tks:' (did you mean tk:? declare it with PREFIX tks: <IRI>)"
    """
    message = str(error).strip()
    first = message.splitlines()[0] if message else "syntax error"
    undefined = undefined_prefix(text, predefined)
    reported = _POSITION.match(first)
    if undefined is None or (reported and (int(reported[1]), int(reported[2])) < undefined[1:]):
        return f"invalid SPARQL: {first}"  # no undeclared prefix, or an error before it
    prefix, line, column = undefined
    close = difflib.get_close_matches(prefix, list(predefined), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}:? " if close else ""
    return (
        f"invalid SPARQL: error at {line}:{column}: undefined prefix '{prefix}:' "
        f"({hint}declare it with PREFIX {prefix}: <IRI>)"
    )


def with_project_prefixes(text: str, shape: QueryShape | None = None, prefixes: Mapping[str, str] = PREFIXES) -> str:
    """``text`` with a PREFIX declaration for each of ``prefixes`` (the project's) it uses without declaring.

    The declarations go on the query's first line, so line numbers in Oxigraph's errors stay right.

    >>> with_project_prefixes("SELECT * { ?t a tk:Tool }")
    'PREFIX tk: <https://w3id.org/toolkg/ontology#> SELECT * { ?t a tk:Tool }'
    >>> with_project_prefixes("PREFIX tk: <urn:mine#> SELECT * { ?t a tk:Tool }")
    'PREFIX tk: <urn:mine#> SELECT * { ?t a tk:Tool }'
    """
    shape = shape or measure(text)
    missing = [p for p in prefixes if p in shape.used and p not in shape.declared]
    if not missing:
        return text
    return "".join(f"PREFIX {p}: <{prefixes[p]}> " for p in missing) + text


def on_large_stack(run: Callable[[], T]) -> T:
    """``run()`` on a thread with a 512 MiB stack, its result or its exception returned here.

    Oxigraph parses and evaluates in the calling thread; in Python's main thread (8 MiB) a few hundred nested
    or chained clauses overflow it and end the process with SIGSEGV. On this stack the same queries finish
    (measured: 3,000 BINDs, braces or NOT EXISTS that crash the main thread), so the guard's limits are a
    second line here, not the only one."""
    outcome: dict[str, object] = {}

    def target() -> None:
        try:
            outcome["value"] = run()
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    with _STACK_LOCK:  # threading.stack_size is process-wide: set, start, put back
        previous = threading.stack_size(LARGE_STACK_BYTES)
        try:
            thread = threading.Thread(target=target, name="toolkg-query", daemon=True)
            thread.start()
        finally:
            threading.stack_size(previous)
    thread.join()
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


_STACK_LOCK = threading.Lock()
