"""Closed vocabularies read from ``toolkg.ttl``: dependency kinds, structural link types, dependency bases.

The Literal types of the models (``toolkg.models.DependencyKind``, ``LinkType``), the ToolLinkOS
names the parser accepts, the kinds a retriever follows and the SHACL shapes all come from here, so
adding a kind to the ontology is the one edit that adds it everywhere.

>>> DEPENDENCY_KINDS[:2], DEPENDENCY_KINDS[-1]
(('toolDirectlyDependsOn', 'parameterDirectlyDependsOn'), 'dependsOn')
>>> LINK_TYPES, sorted(SYMMETRIC_LINK_TYPES)
(('coInvokedWith', 'schemaCompatibleWith', 'sharesParametersWith'), ['coInvokedWith', 'sharesParametersWith'])
>>> kind("parameterDirectlyDependsOn"), kind("requires")
Traceback (most recent call last):
...
ValueError: 'requires' is not a sub-property of tk:dependsOn in ontology/toolkg.ttl
>>> Basis.DECLARED == "declared", Basis("llm").node.value
(True, 'https://w3id.org/toolkg/ontology#LLM')
"""

from __future__ import annotations

from collections import defaultdict
from enum import StrEnum
from functools import cache

from pyoxigraph import NamedNode, RdfFormat, parse

from toolkg.ontology import ONTOLOGY_FILE, TK_NS

_SUB_PROPERTY = "http://www.w3.org/2000/01/rdf-schema#subPropertyOf"
_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_SYMMETRIC = "http://www.w3.org/2002/07/owl#SymmetricProperty"
_BASIS_CLASS = TK_NS + "Basis"


@cache
def _hierarchy() -> tuple[dict[str, list[str]], list[str], frozenset[str], tuple[str, ...]]:
    """(parent -> children in file order, every tk: subject in file order, symmetric properties,
    the individuals of tk:Basis)."""
    children: dict[str, list[str]] = defaultdict(list)
    order: list[str] = []
    symmetric: set[str] = set()
    bases: list[str] = []
    for triple in parse(path=str(ONTOLOGY_FILE), format=RdfFormat.TURTLE):
        subject, obj = triple.subject, triple.object
        if not (isinstance(subject, NamedNode) and subject.value.startswith(TK_NS)):
            continue
        name = subject.value[len(TK_NS) :]
        if name not in order:
            order.append(name)
        if triple.predicate.value == _SUB_PROPERTY and isinstance(obj, NamedNode) and obj.value.startswith(TK_NS):
            children[obj.value[len(TK_NS) :]].append(name)
        elif triple.predicate.value == _TYPE and obj.value == _SYMMETRIC:
            symmetric.add(name)
        elif triple.predicate.value == _TYPE and obj.value == _BASIS_CLASS:
            bases.append(name)
    return dict(children), order, frozenset(symmetric), tuple(bases)


def sub_properties(parent: str) -> tuple[str, ...]:
    """``parent`` and every property below it, most specific first (then in the file's order)."""
    children, order, _, _ = _hierarchy()
    depth: dict[str, int] = {parent: 0}
    todo = [parent]
    while todo:
        current = todo.pop()
        for child in children.get(current, ()):
            if child not in depth:
                depth[child] = depth[current] + 1
                todo.append(child)
    return tuple(sorted(depth, key=lambda name: (-depth[name], order.index(name))))


DEPENDENCY_KINDS: tuple[str, ...] = sub_properties("dependsOn")
LINK_TYPES: tuple[str, ...] = tuple(name for name in sub_properties("linkedTo") if name != "linkedTo")
SYMMETRIC_LINK_TYPES: frozenset[str] = frozenset(LINK_TYPES) & _hierarchy()[2]


class Basis(StrEnum):
    """Where a dependency comes from: the individuals of ``tk:Basis``, spelt as the store's reads give
    them back (``LCASE(STRAFTER(STR(?b), "#"))``: ``tk:Declared`` -> ``"declared"``). A str, so rows
    compare to it directly; ``.node`` is the ontology term to write."""

    DECLARED = "declared"  # stated by the manifest (the server graphs)
    INFERRED = "inferred"  # derived by toolkg's rules (the inferred-dependencies graph)
    LLM = "llm"  # proposed or confirmed by a language model

    @property
    def node(self) -> NamedNode:
        return NamedNode(TK_NS + _BASIS_TERMS[self.value])


_BASIS_TERMS = {name.lower(): name for name in _hierarchy()[3]}
# The members are written out so code can name them; the ontology still decides: a basis added to or
# renamed in toolkg.ttl fails here, at import, not as rows that match nothing.
if set(_BASIS_TERMS) != set(Basis):
    raise RuntimeError(f"Basis {sorted(Basis)} does not match the tk:Basis individuals {sorted(_BASIS_TERMS)}")


def kind(name: str) -> str:
    """``name`` when the ontology declares it as a dependency kind; code names the kinds it writes
    through this, so a renamed kind fails at import, not in the store."""
    if name not in DEPENDENCY_KINDS:
        raise ValueError(f"{name!r} is not a sub-property of tk:dependsOn in ontology/toolkg.ttl")
    return name


def link_type(name: str) -> str:
    """``name`` when the ontology declares it as a structural link type (a sub-property of tk:linkedTo)."""
    if name not in LINK_TYPES:
        raise ValueError(f"{name!r} is not a sub-property of tk:linkedTo in ontology/toolkg.ttl")
    return name


def upper_snake(name: str) -> str:
    """``toolDirectlyDependsOn`` -> ``TOOL_DIRECTLY_DEPENDS_ON`` (how ToolLinkOS spells the kinds).

    >>> upper_snake("parameterIndirectlyDependsOn")
    'PARAMETER_INDIRECTLY_DEPENDS_ON'
    """
    return "".join(f"_{c}" if c.isupper() else c.upper() for c in name)
