"""SHACL shapes compiled to SPARQL, run by Oxigraph in-process: the validate stage's default engine.

``compile_shapes`` reads a shapes file and turns every property shape of a targeted shape into one
SPARQL branch that returns the focus nodes violating it; the branches form one UNION query, run over
an in-memory Oxigraph store of the triples checked. A shape feature the compiler does not know raises
``ShapeCompileError`` when the shapes are read, so a new shape is never silently left unchecked.

The reference is pySHACL (``store/shacl_worker.py``), and its results are matched exactly, including
where pySHACL reads RDF through rdflib rather than as the SHACL text says:

- a typed literal is taken as rdflib takes it: its lexical form normalised ("1"^^xsd:boolean is
  "true"^^xsd:boolean, so a node holding both has one value), ill-typed as rdflib's lexical rules say
  (``Decimal`` accepts "1e5"; xsd:boolean accepts exactly true/false/1/0);
- sh:pattern is Python's ``re.search`` over the value's string (an IRI's too), with only the i and m flags;
- sh:minInclusive / sh:maxInclusive compare as pySHACL does (a string never compares with a number, an
  IRI never passes).

Those three value judgements are made in Python once per distinct literal while the triples are
loaded, and reach the query as marker triples; targets, paths, counts, sh:class (rdf:type and
rdfs:subClassOf* in the data graph, no inference), sh:datatype, sh:nodeKind, sh:in and sh:minLength
are SPARQL. Like pySHACL, an xsd:decimal "NaN" under a range raises (``decimal.InvalidOperation``), which
the build reports as the manifest's failure to validate.
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

from pyoxigraph import BlankNode, Literal, NamedNode, QuerySolutions, RdfFormat, Store, Triple, parse, serialize

SH = "http://www.w3.org/ns/shacl#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
RDF_LANG_STRING = RDF + "langString"
RDF_TYPE = RDF + "type"
RDFS_SUBCLASS_OF = RDFS + "subClassOf"

# Marker predicates of the loaded store: a value judged in Python (ill-typed, failing a pattern or range).
_ILL_TYPED = "urn:toolkg:shacl:ill-typed:"
_FAILS = "urn:toolkg:shacl:fails:"
# Oxigraph stores a number, a boolean or a date by its value ("0.50" and "0.5" become one term, written
# "0.5"), where rdflib keeps the lexical form. So a typed literal (other than xsd:string) is loaded under
# a datatype Oxigraph does not know, which keeps its lexical form and its identity: D becomes <_TYPED D>.
_TYPED = "urn:toolkg:shacl:typed:"
# Lines of N-Triples as Oxigraph writes them (one triple a line, escapes inside literals, xsd:string unwritten).
_LITERAL = r'"((?:[^"\\]|\\.)*)"'
# Python's re tries a MULTILINE "^" at every character: the patterns that scan the text start with literal
# text instead (ten times faster), and the line is read from its start once found.
_TYPED_END = re.compile(r'"\^\^<[^>]*> \.$', re.M)
_TYPED_LINE = re.compile(rf"(\S+) <([^>]*)> {_LITERAL}\^\^<([^>]*)> \.")
_UNTYPED_OBJECT = rf"(<[^>]*>|_:\S+|{_LITERAL}(?:@(\S+))?)"
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))")
_ECHAR = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}

_NODE_KINDS = {
    SH + "IRI": ("isIRI",),
    SH + "BlankNode": ("isBlank",),
    SH + "Literal": ("isLiteral",),
    SH + "BlankNodeOrIRI": ("isBlank", "isIRI"),
    SH + "BlankNodeOrLiteral": ("isBlank", "isLiteral"),
    SH + "IRIOrLiteral": ("isIRI", "isLiteral"),
}
# What a shape may say besides targets, paths and constraints: what it reports, and annotations.
_ANNOTATIONS = {SH + k for k in ("message", "severity", "deactivated", "name", "description", "order", "group")}
# Not sh:severity on a node shape: under pySHACL's allow_warnings it turns its property shapes' violations
# into conformance when nothing else fails, and into violations when something does.
_NODE_KEYS = (_ANNOTATIONS - {SH + "severity"}) | {SH + "targetClass", SH + "property"}
_PROPERTY_KEYS = _ANNOTATIONS | {SH + "path"}
_CLASSES = {RDFS + "Class", "http://www.w3.org/2002/07/owl#Class"}
_COMPONENTS = {SH + k for k in ("minCount", "maxCount", "datatype", "minLength", "pattern", "flags", "class")}
_COMPONENTS |= {SH + k for k in ("nodeKind", "in", "minInclusive", "maxInclusive")}


class ShapeCompileError(ValueError):
    """The shapes use a SHACL feature this compiler does not implement (or use one ambiguously)."""


@dataclass
class PropertyCheck:
    """One property shape as it applies to the focus nodes of its targets."""

    key: int
    shape: str
    path: str
    message: str
    targets: tuple[str, ...]
    min_count: int | None = None
    max_count: int | None = None
    datatype: str | None = None
    min_length: int | None = None
    pattern: re.Pattern | None = None
    classes: tuple[str, ...] = ()
    node_kind: str | None = None
    allowed: tuple[Literal | NamedNode | BlankNode, ...] | None = None
    min_inclusive: tuple[str, str] | None = None  # (lexical form, datatype)
    max_inclusive: tuple[str, str] | None = None
    judged_in_python: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        ranged = self.min_inclusive is not None or self.max_inclusive is not None
        self.judged_in_python = self.pattern is not None or ranged

    def passes_in_python(self, string: str | None, read_as: tuple[str, str] | None) -> bool:
        """The pattern and range components for one value: ``string`` is its lexical form or IRI (None for a
        blank node), ``read_as`` the (lexical form, datatype or "@lang") rdflib reads a literal from (None
        for an IRI or a blank node)."""
        if self.pattern is not None and (string is None or not self.pattern.search(string)):
            return False
        for bound, at_least in ((self.min_inclusive, True), (self.max_inclusive, False)):
            if bound is not None and not _within(_rdflib_term(*read_as) if read_as else None, bound, at_least):
                return False
        return True


class CompiledShapes:
    """The checks of a shapes file, the one query that runs them and the predicates they read."""

    def __init__(self, checks: Sequence[PropertyCheck]) -> None:
        self.checks = tuple(checks)
        paths = {c.path for c in self.checks}
        # Triples of other predicates cannot change a result; rdf:type and rdfs:subClassOf make targets and classes.
        self.predicates = frozenset(paths | {RDF_TYPE, RDFS_SUBCLASS_OF})
        self.predicate_nodes = frozenset(NamedNode(p) for p in self.predicates)
        self._ill_typed = {path: NamedNode(f"{_ILL_TYPED}{n}") for n, path in enumerate(sorted(paths))}
        self._judged: dict[str, list[PropertyCheck]] = {}
        for check in self.checks:
            if check.judged_in_python:
                self._judged.setdefault(check.path, []).append(check)
        self._tails: dict[tuple[str, str, str], tuple[Literal, list[str]]] = {}
        self._judged_values = {
            path: re.compile(rf" <{re.escape(path)}> {_UNTYPED_OBJECT} \.$", re.M) for path in self._judged
        }
        # rdf:type/rdfs:subClassOf* costs a sixth more than rdf:type, and is the same when the data
        # declares no subclass: each query is used where it is exact.
        self.query = _union_query(self.checks, self._ill_typed, f"<{RDF_TYPE}>/<{RDFS_SUBCLASS_OF}>*")
        self.query_without_subclasses = _union_query(self.checks, self._ill_typed, f"<{RDF_TYPE}>")

    def violations(self, triples: Iterable[Triple]) -> set[tuple[str, str, str]]:
        """(focus node, path, message) of every violation; the triples are those of the data graph."""
        if not self.checks:
            return set()
        text = self._ntriples([t for t in triples if t.predicate in self.predicate_nodes])
        store = Store()
        # The terms come from pyoxigraph already checked: the lenient parser does not check them again.
        store.load(text, format=RdfFormat.N_TRIPLES, lenient=True)
        subclasses = f"<{RDFS_SUBCLASS_OF}>" in text
        found = set()
        rows = store.query(self.query if subclasses else self.query_without_subclasses)
        assert isinstance(rows, QuerySolutions), "the checks are SELECT queries"
        for row in rows:
            check = self.checks[int(row[1].value)]
            found.add((row[0].value, check.path, check.message))
        return found

    def _ntriples(self, triples: Sequence[Triple]) -> str:
        """The triples as rdflib would hold them, in N-Triples, plus the marker triples of the Python judgements.

        Oxigraph writes the N-Triples (a sixth of the time Python takes to write them a triple at a time, and
        loading text is faster than loading Quad objects); Python then reads back only the lines it judges:
        the typed literals, and the values of the paths with a pattern or a range."""
        data = serialize(triples, format=RdfFormat.N_TRIPLES)
        assert data is not None, "serialize() returns the bytes when given no output"
        text = data.decode()
        pieces: list[str] = []
        done = 0  # text[:done] is in pieces
        first_of: set[tuple] = set()  # (s, p, normalised o) of the typed literals kept
        for end in _TYPED_END.finditer(text):
            start = text.rfind("\n", 0, end.start()) + 1
            line = _TYPED_LINE.fullmatch(text, start, end.end())
            if line is None:  # not a typed literal's line after all ("^^< inside a string)
                continue
            pieces.append(text[done:start])
            done = end.end()
            subject, predicate, lexical, datatype = line.groups()
            normal, tails = self._typed_tails(predicate, lexical, datatype)
            if (subject, predicate, normal) in first_of:
                continue  # rdflib keeps the first of two literals it reads as one term
            first_of.add((subject, predicate, normal))
            pieces.append("\n".join(subject + tail for tail in tails))
        pieces.append(text[done:])
        for path, values in self._judged_values.items():  # the other values (IRIs, strings) of judged paths
            for line in values.finditer(text):
                subject = text[text.rfind("\n", 0, line.start()) + 1 : line.start()]
                value, lexical, language = line.groups()
                string: str | None
                if lexical is not None:
                    string = _unescape(lexical)
                    read_as: tuple[str, str] | None = (string, "@" + language if language else XSD_STRING)
                else:
                    string, read_as = (None if value.startswith("_:") else value[1:-1]), None
                for check in self._judged[path]:
                    if not check.passes_in_python(string, read_as):
                        pieces.append(f"{subject} <{_FAILS}{check.key}> {value} .\n")
        return "".join(pieces)

    def _typed_tails(self, predicate: str, lexical: str, datatype: str) -> tuple[Literal, list[str]]:
        """A typed literal's line as loaded, and its marker lines, each without its subject; by the few
        distinct (predicate, literal) there are (booleans, confidences), so each is worked out once."""
        key = (predicate, lexical, datatype)
        found = self._tails.get(key)
        if found is None:
            read_as = (_unescape(lexical), datatype)
            normal, ill_typed = _as_rdflib_reads(*read_as)
            value = str(normal)
            tails = [f" <{predicate}> {value} ."]
            if ill_typed and predicate in self._ill_typed:
                tails.append(f" {self._ill_typed[predicate]} {value} .")
            for check in self._judged.get(predicate, ()):
                if not check.passes_in_python(normal.value, read_as):
                    tails.append(f" <{_FAILS}{check.key}> {value} .")
            if len(self._tails) > 65536:
                self._tails.clear()
            found = self._tails[key] = (normal, tails)
        return found


@cache
def compiled_shapes(shapes_file: str) -> CompiledShapes:
    return compile_shapes(Path(shapes_file))


def compile_shapes(shapes_file: Path) -> CompiledShapes:
    """Every active property shape of every shape with a sh:targetClass, as ``PropertyCheck``s."""
    graph: dict[object, list[tuple[str, NamedNode | BlankNode | Literal]]] = {}
    for t in parse(path=str(shapes_file), format=RdfFormat.TURTLE):
        assert not isinstance(t.object, Triple), "a SHACL shapes file has no RDF-star quoted triples"
        graph.setdefault(t.subject, []).append((t.predicate.value, t.object))
    checks: list[PropertyCheck] = []
    for node, facts in graph.items():
        targets = tuple(sorted(o.value for p, o in facts if p == SH + "targetClass"))
        other_targets = {p for p, _ in facts if p.startswith(SH + "target") and p != SH + "targetClass"}
        if any(p == RDF_TYPE and o.value in _CLASSES for p, o in facts) and any(p.startswith(SH) for p, _ in facts):
            other_targets.add("a shape that is a class (an implicit target)")
        if other_targets:
            raise ShapeCompileError(f"{_name(node)}: only sh:targetClass targets are compiled, not {other_targets}")
        if not targets or _deactivated(facts):
            continue
        if any(p == SH + "path" for p, _ in facts):
            raise ShapeCompileError(f"{_name(node)}: a targeted property shape; put it under a node shape")
        stray = {p for p, _ in facts if p.startswith(SH) and p not in _NODE_KEYS}
        if stray:
            raise ShapeCompileError(f"{_name(node)}: constraints on a node shape itself are not compiled: {stray}")
        for _, prop in (f for f in facts if f[0] == SH + "property"):
            prop_facts = graph.get(prop, [])
            if _reported(prop_facts):
                checks.append(_property_check(len(checks), prop, prop_facts, targets, graph))
    for bound in (b for c in checks for b in (c.min_inclusive, c.max_inclusive) if b is not None):
        _rdflib_term(*bound)  # read now: rdflib's import is paid with the shapes (a warm sync), not by a first value
    return CompiledShapes(checks)


def _property_check(key: int, node, facts, targets, graph) -> PropertyCheck:
    values: dict[str, list] = {}
    for p, o in facts:
        if p.startswith(SH) and p not in _PROPERTY_KEYS and p not in _COMPONENTS:
            raise ShapeCompileError(f"{_name(node)}: SHACL feature {p.removeprefix(SH)!r} is not compiled")
        values.setdefault(p, []).append(o)

    def one(name: str, required: bool = False):
        found = values.get(SH + name, [])
        if len(found) > 1 or (required and not found):
            raise ShapeCompileError(f"{_name(node)}: needs {'exactly' if required else 'at most'} one sh:{name}")
        return found[0] if found else None

    path = one("path", required=True)
    if not isinstance(path, NamedNode):
        raise ShapeCompileError(f"{_name(node)}: only a predicate (an IRI) is compiled as sh:path")
    message = one("message", required=True)  # pySHACL's own wording of a result is not reproduced
    if not isinstance(message, Literal):
        raise ShapeCompileError(f"{_name(node)}: sh:message must be a literal")
    pattern = one("pattern")
    flags = one("flags")
    node_kind = one("nodeKind")
    if node_kind is not None and node_kind.value not in _NODE_KINDS:
        raise ShapeCompileError(f"{_name(node)}: unknown sh:nodeKind {node_kind.value}")
    allowed = one("in")
    return PropertyCheck(
        key=key,
        shape=_name(node),
        path=path.value,
        message=message.value,
        targets=targets,
        min_count=_integer(one("minCount")),
        max_count=_integer(one("maxCount")),
        datatype=_iri(one("datatype")),
        min_length=_integer(one("minLength")),
        pattern=_python_pattern(pattern, flags) if pattern is not None else None,
        classes=tuple(sorted(c.value for c in values.get(SH + "class", []))),
        node_kind=node_kind.value if node_kind is not None else None,
        allowed=tuple(_as_read(v) for v in _items(allowed, graph)) if allowed is not None else None,
        min_inclusive=_lexical(one("minInclusive")),
        max_inclusive=_lexical(one("maxInclusive")),
    )


def _union_query(checks: Sequence[PropertyCheck], ill_typed: dict[str, NamedNode], instance_of: str) -> str:
    """One SELECT of (focus, check), a UNION branch per check.

    A check with counts groups each focus node's values and tests the count and each value in the one
    grouping (a quarter faster than a count branch and a value branch apart); a check without counts
    filters the values. Every test is free of evaluation errors, which would drop a group silently."""
    branches = []
    for check in checks:
        focus = " UNION ".join(f"{{ ?focus {instance_of} <{c}> }}" for c in check.targets)
        path = f"<{check.path}>"
        tests = " && ".join(_value_tests(check, ill_typed[check.path], instance_of))
        bad = []
        if check.min_count is not None:
            bad.append(f"COUNT(DISTINCT ?v) < {check.min_count}")
        if check.max_count is not None:
            bad.append(f"COUNT(DISTINCT ?v) > {check.max_count}")
        if bad:
            if tests:
                bad.append(f"MAX(IF(BOUND(?v) && !({tests}), 1, 0)) = 1")
            branches.append(
                f"{{ SELECT ?focus ({check.key} AS ?check) WHERE {{ {focus} OPTIONAL {{ ?focus {path} ?v }} }}"
                f" GROUP BY ?focus HAVING ({' || '.join(bad)}) }}"
            )
        elif tests:
            branches.append(f"{{ {focus} ?focus {path} ?v FILTER(!({tests})) BIND({check.key} AS ?check) }}")
    return "SELECT DISTINCT ?focus ?check WHERE {\n" + "\nUNION\n".join(branches) + "\n}"


def _value_tests(check: PropertyCheck, ill_typed: NamedNode, instance_of: str) -> list[str]:
    """SPARQL conditions a conforming value meets; none of them can raise an evaluation error."""
    tests = []
    if check.datatype == XSD_STRING:
        tests.append(f"(isLiteral(?v) && datatype(?v) = <{XSD_STRING}>)")
    elif check.datatype == RDF_LANG_STRING:
        tests.append('(isLiteral(?v) && lang(?v) != "")')
    elif check.datatype == RDFS + "Literal":
        tests.append("isLiteral(?v)")
    elif check.datatype == RDFS + "Datatype":
        tests.append('(isLiteral(?v) && lang(?v) = "")')
    elif check.datatype is not None:
        tests.append(
            f"(isLiteral(?v) && datatype(?v) = <{_TYPED}{check.datatype}>"
            f" && NOT EXISTS {{ ?focus <{ill_typed.value}> ?v }})"
        )
    if check.min_length:  # 0 passes everything, blank nodes included
        tests.append(f"(!isBlank(?v) && STRLEN(STR(?v)) >= {check.min_length})")
    for c in check.classes:
        tests.append(f"EXISTS {{ ?v {instance_of} <{c}> }}")
    if check.node_kind is not None:
        tests.append("(" + " || ".join(f"{f}(?v)" for f in _NODE_KINDS[check.node_kind]) + ")")
    if check.allowed is not None:
        tests.append("(" + (" || ".join(f"sameTerm(?v, {term})" for term in check.allowed) or "false") + ")")
    if check.judged_in_python:
        tests.append(f"NOT EXISTS {{ ?focus <{_FAILS}{check.key}> ?v }}")
    return tests


# -- values as pySHACL reads them (through rdflib) ---------------------------------------------------


@lru_cache(maxsize=4096)
def _as_rdflib_reads(lexical: str, datatype: str) -> tuple[Literal, bool]:
    """A typed literal (not a string) as rdflib reads it, as loaded (its normalised lexical form, its
    datatype out of Oxigraph's sight), and whether it is ill-typed. Few distinct ones occur (booleans,
    confidences), hence the cache."""
    held = _rdflib_term(lexical, datatype)
    return Literal(str(held), datatype=NamedNode(_TYPED + datatype)), held.ill_typed is True


@lru_cache(maxsize=4096)
def _rdflib_term(lexical: str, datatype: str):
    """rdflib's literal of a lexical form and a datatype IRI (or "@" and a language tag)."""
    import rdflib

    # rdflib warns about, and logs with a traceback, each ill-typed literal it reads: a verdict here, not news.
    log = logging.getLogger("rdflib.term")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if datatype.startswith("@"):
                return rdflib.Literal(lexical, lang=datatype[1:])
            return rdflib.Literal(lexical, datatype=rdflib.URIRef(datatype))
    finally:
        log.setLevel(level)


def _within(value, bound: tuple[str, str], at_least: bool) -> bool:
    """pySHACL's sh:minInclusive / sh:maxInclusive on one value node (``value`` None: not a literal)."""
    if value is None:
        return False
    limit = _rdflib_term(*bound)
    if isinstance(limit.value, str) != isinstance(value.value, str):
        return False  # a string never compares with a non-string
    try:
        order = _compare(value, limit)
    except (TypeError, NotImplementedError):
        return False
    return order >= 0 if at_least else order <= 0


def _compare(left, right) -> int:
    """pyshacl.rdfutil.compare.compare_literal, which these results must match."""
    import datetime

    if left.eq(right):
        return 0
    if left.value.__class__ in (datetime.datetime, datetime.time):
        if left.value == right.value:
            return 0
        if left.value > right.value:
            return 1
    elif left > right:
        return 1
    return -1


def _python_pattern(pattern: Literal, flags: Literal | None) -> re.Pattern:
    """The pattern as pySHACL compiles it: Python syntax, of sh:flags only i and m."""
    given = (flags.value if flags is not None else "").lower()
    return re.compile(pattern.value, (re.I if "i" in given else 0) | (re.M if "m" in given else 0))


# -- reading the shapes graph ------------------------------------------------------------------------


def _deactivated(facts) -> bool:
    return any(p == SH + "deactivated" and getattr(o, "value", "") == "true" for p, o in facts)


def _reported(facts) -> bool:
    """Only violations are reported (a property shape's results carry its own severity)."""
    return not _deactivated(facts) and all(o.value == SH + "Violation" for p, o in facts if p == SH + "severity")


def _items(head, graph) -> list:
    """The members of an RDF list."""
    items = []
    while not (isinstance(head, NamedNode) and head.value == RDF + "nil"):
        facts = dict(graph.get(head, []))
        if RDF + "first" not in facts:
            raise ShapeCompileError(f"{_name(head)} is not an RDF list")
        items.append(facts[RDF + "first"])
        head = facts.get(RDF + "rest")
    return items


def _unescape(lexical: str) -> str:
    """A literal's lexical form from its N-Triples escapes."""
    if "\\" not in lexical:
        return lexical
    return _ESCAPE.sub(lambda m: chr(int(m[1] or m[2], 16)) if m[1] or m[2] else _ECHAR[m[3]], lexical)


def _as_read(term) -> NamedNode | Literal:
    """A member of sh:in as rdflib reads it (rdflib reads the shapes too)."""
    if isinstance(term, BlankNode):
        raise ShapeCompileError("a blank node in sh:in is not compiled")
    if isinstance(term, Literal) and term.language is None and term.datatype.value != XSD_STRING:
        return _as_rdflib_reads(term.value, term.datatype.value)[0]
    return term


def _lexical(term) -> tuple[str, str] | None:
    if term is None:
        return None
    if not isinstance(term, Literal):
        raise ShapeCompileError(f"{term} must be a literal")
    return (term.value, "@" + term.language) if term.language else (term.value, term.datatype.value)


def _integer(term) -> int | None:
    if term is None:
        return None
    if not isinstance(term, Literal) or not term.value.lstrip("+").isdigit():
        raise ShapeCompileError(f"{term} must be a non-negative integer")
    return int(term.value)


def _iri(term) -> str | None:
    if term is not None and not isinstance(term, NamedNode):
        raise ShapeCompileError(f"{term} must be an IRI")
    return term.value if term is not None else None


def _name(node) -> str:
    return node.value if isinstance(node, NamedNode) else f"a blank node shape ({node})"
