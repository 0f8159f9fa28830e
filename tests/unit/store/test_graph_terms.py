"""Every ``tk:`` term the code writes or queries is declared in ``ontology/toolkg.ttl``.

A SPARQL string that names a term the ontology lacks is no error to Oxigraph: the query just finds
nothing, and the mistake shows up as an empty result somewhere far away. ``TK.name`` fails at import
(``toolkg.ontology._Vocabulary``), but only when that line runs. So this reads the source instead: every
string constant of the package that looks like SPARQL (f-strings' constant parts included), every
saved query under ``store/queries``, the SHACL shapes and every ``TK.name`` attribute, and checks each
``tk:`` local name against the ontology's subjects.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pyoxigraph import NamedNode, RdfFormat, parse

from tests.support.layout import package_folders
from toolkg.ontology import ONTOLOGY_FILE, SHAPES_FILE, TK_NS

ROOT = Path(__file__).resolve().parents[3]
QUERIES = ROOT / "store" / "queries"

# A string is SPARQL when it has a keyword of the language or names a tk: term; docstrings that
# mention tk: terms are checked too, since they name the same vocabulary.
_SPARQLISH = re.compile(r"\b(SELECT|ASK|CONSTRUCT|INSERT|DELETE|PREFIX)\b|\btk:")
# A prefixed name's local part (SPARQL PN_LOCAL, minus the rarely used escapes); a trailing '.' ends
# a triple, not the name.
_TERM = re.compile(r"(?<![\w:/#])tk:([A-Za-z_][\w-]*(?:\.[\w-]+)*)")
# The same term written out as an IRI (``<https://w3id.org/toolkg/ontology#Tool>``).
_FULL_IRI = re.compile(re.escape(TK_NS) + r"([A-Za-z_]\w*)")


def source_files() -> list[Path]:
    """Every Python module of the installed package, from the layout setup.py finds."""
    return sorted(path for folder in set(package_folders().values()) for path in folder.glob("*.py"))


def declared_terms(path: Path = ONTOLOGY_FILE) -> frozenset[str]:
    """Local names of every subject in the tk: namespace of the Turtle file ``path`` (the ontology)."""
    return frozenset(
        t.subject.value[len(TK_NS) :]
        for t in parse(path=str(path), format=RdfFormat.TURTLE)
        if isinstance(t.subject, NamedNode) and t.subject.value.startswith(TK_NS)
    )


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every string constant, an f-string's constant parts one by one."""
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def _tk_attributes(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every ``TK.name``, ``TK["name"]`` and ``TK_NS + "name"`` in the code."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "TK":
            out.append((node.lineno, node.attr))
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Add)
            and isinstance(node.left, ast.Name)
            and node.left.id == "TK_NS"
            and isinstance(node.right, ast.Constant)
            and isinstance(node.right.value, str)
        ):
            out.append((node.lineno, node.right.value))
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "TK"
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            out.append((node.lineno, node.slice.value))
    return out


def used_terms(source: str, where: str) -> list[tuple[str, str]]:
    """(place, tk: local name) of every term ``source`` (Python) names in SPARQL text or as ``TK.name``."""
    tree = ast.parse(source, where)
    out = []
    for line, text in _strings(tree):
        if _SPARQLISH.search(text):
            out += [(f"{where}:{line}", name) for name in _TERM.findall(text)]
        out += [(f"{where}:{line}", name) for name in _FULL_IRI.findall(text)]
    out += [(f"{where}:{line}", name) for line, name in _tk_attributes(tree) if not name.startswith("_")]
    return out


def undeclared(uses: list[tuple[str, str]], declared: frozenset[str]) -> list[str]:
    return sorted(f"{place}: tk:{name}" for place, name in uses if name not in declared)


def all_uses() -> list[tuple[str, str]]:
    """Every term the package source and the saved queries name; the shapes' terms other than the
    shapes themselves (``tk:ToolShape`` ... are declared in shapes.ttl, not the ontology)."""
    uses = []
    for path in source_files():
        uses += used_terms(path.read_text(), str(path.relative_to(ROOT)))
    shapes = declared_terms(SHAPES_FILE)
    for path in [*sorted(QUERIES.glob("*.rq")), SHAPES_FILE]:
        names = _TERM.findall(path.read_text())
        uses += [(str(path.relative_to(ROOT)), n) for n in names if path != SHAPES_FILE or n not in shapes]
    return uses


def test_every_tk_term_in_code_and_queries_is_declared():
    uses = all_uses()
    # Not vacuous: the walk reached the package, the saved queries and the shapes.
    places = {place.partition(":")[0] for place, _ in uses}
    assert "store/dependencies.py" in places and "store/catalog_reads.py" in places
    assert any(place.endswith(".rq") for place in places) and "ontology/shapes.ttl" in places
    assert any(name == "Tool" for _, name in uses)
    assert undeclared(uses, declared_terms()) == []


def test_the_checker_reports_an_undeclared_term():
    """A misspelt term in a query, an f-string's constant part, a TK attribute or subscript, a full
    IRI or ``TK_NS + ...`` is reported with where it is; declared terms and non-SPARQL text are not."""
    source = '''
NAME = "tk:NotSparqlButNamed"
LABEL = "just a sentence about tk-less things"
Q = """SELECT ?t WHERE { ?t a tk:Tool ; tk:hasParamter ?p . }"""
def f(graph):
    return f"SELECT ?x WHERE {{ GRAPH {graph} {{ ?x tk:identifer ?id }} }}"
NODE = TK.Tool
BAD = TK.Toool
WORSE = TK["Servr"]
IRI = "<https://w3id.org/toolkg/ontology#hasTool> <https://w3id.org/toolkg/ontology#ownedByy>"
ADDED = TK_NS + "Paramter"
'''
    found = undeclared(used_terms(source, "fake.py"), declared_terms())
    assert set(found) == {
        "fake.py:2: tk:NotSparqlButNamed",
        "fake.py:4: tk:hasParamter",
        "fake.py:6: tk:identifer",
        "fake.py:8: tk:Toool",
        "fake.py:9: tk:Servr",
        "fake.py:10: tk:ownedByy",
        "fake.py:11: tk:Paramter",
    }
