"""What the triple extractors may say, read from ``toolkg.ttl``.

The classes and predicates marked ``tk:extractionTerm true`` become the closed choices of
the extractors' response models and of the extraction prompt; a predicate's ``rdfs:domain``
and ``rdfs:range`` (expanded to the extractable subclasses, ``owl:unionOf`` understood) decide
which (head type, predicate, tail type) combinations are allowed.

>>> schema = extraction_schema()
>>> schema.allows("Tool", "hasEntity", "BusinessObject")
True
>>> schema.allows("Tool", "hasEntity", "Department")
False
>>> sorted(schema.predicates["refersTo"].range)
['BusinessObject', 'Capability', 'Department', 'LineOfBusiness']
>>> ENTITY_TYPES
('BusinessObject', 'Capability', 'LineOfBusiness', 'Department')
"""

from __future__ import annotations

from collections import defaultdict
from functools import cache
from typing import cast

from pydantic import BaseModel, ConfigDict
from pyoxigraph import BlankNode, Literal, NamedNode, RdfFormat, Triple, parse

from toolkg.ontology import ONTOLOGY_FILE, TK_NS

_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_RDFS = "http://www.w3.org/2000/01/rdf-schema#"
_OWL_UNION = "http://www.w3.org/2002/07/owl#unionOf"
_SUBCLASS = _RDFS + "subClassOf"


class PredicateSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    label: str
    comment: str
    domain: frozenset[str]
    range: frozenset[str]


class ExtractionSchema(BaseModel):
    model_config = ConfigDict(frozen=True)

    types: dict[str, str]  # local name -> rdfs:comment
    predicates: dict[str, PredicateSpec]

    def allows(self, head_type: str, predicate: str, tail_type: str) -> bool:
        spec = self.predicates.get(predicate)
        return spec is not None and head_type in spec.domain and tail_type in spec.range


@cache
def entity_types() -> tuple[str, ...]:
    """The kinds of entity (the subclasses of ``tk:Entity``), in the ontology's order: the order
    canonicalization clusters them and the ego-graph retriever lists their nodes."""
    entity = TK_NS + "Entity"
    return tuple(
        t.subject.value[len(TK_NS) :]
        for t in parse(path=str(ONTOLOGY_FILE), format=RdfFormat.TURTLE)
        if t.predicate.value == _SUBCLASS and t.object.value == entity and t.subject.value.startswith(TK_NS)
    )


ENTITY_TYPES: tuple[str, ...] = entity_types()


@cache
def extraction_schema() -> ExtractionSchema:
    triples = list(parse(path=str(ONTOLOGY_FILE), format=RdfFormat.TURTLE))
    by_subject: dict[object, dict[str, list[NamedNode | BlankNode | Literal]]] = defaultdict(lambda: defaultdict(list))
    for t in triples:
        assert not isinstance(t.object, Triple), "the ontology has no RDF-star quoted triples"
        by_subject[t.subject][t.predicate.value].append(t.object)

    def local(node) -> str | None:
        return node.value[len(TK_NS) :] if isinstance(node, NamedNode) and node.value.startswith(TK_NS) else None

    def text(subject, prop: str) -> str:
        values = by_subject[subject].get(prop, [])
        return values[0].value if values and isinstance(values[0], Literal) else ""

    marked = {
        local(s)
        for s, props in by_subject.items()
        if any(isinstance(o, Literal) and o.value == "true" for o in props.get(TK_NS + "extractionTerm", []))
    }
    marked.discard(None)
    is_property = {
        local(s)
        for s, p in by_subject.items()
        if any(o.value.endswith("ObjectProperty") for o in p.get(_RDF + "type", []))
    }
    names = cast(set[str], marked)  # None discarded above
    types = {name for name in names if name not in is_property}
    subclasses: dict[str, set[str]] = defaultdict(set)
    for s, props in by_subject.items():
        for parent in props.get(_RDFS + "subClassOf", []):
            child_name, parent_name = local(s), local(parent)
            if child_name and parent_name:
                subclasses[parent_name].add(child_name)

    def expand(node) -> set[str]:
        """The extractable classes a domain/range node denotes (itself, its subclasses, union members)."""
        if isinstance(node, BlankNode):
            out: set[str] = set()
            for head in by_subject[node].get(_OWL_UNION, []):
                while isinstance(head, BlankNode) and by_subject[head].get(_RDF + "first"):
                    out |= expand(by_subject[head][_RDF + "first"][0])
                    head = by_subject[head][_RDF + "rest"][0]
            return out
        name = local(node)
        if name is None:
            return set()
        found = {name} if name in types else set()
        for child in subclasses.get(name, ()):
            found |= expand(NamedNode(TK_NS + child))
        return found

    predicates = {}
    for name in sorted(names & is_property):
        subject = NamedNode(TK_NS + name)
        domain = set().union(*(expand(d) for d in by_subject[subject].get(_RDFS + "domain", [])))
        range_ = set().union(*(expand(r) for r in by_subject[subject].get(_RDFS + "range", [])))
        if not domain or not range_:
            raise RuntimeError(f"tk:{name} is an extraction term but has no extractable rdfs:domain/rdfs:range")
        predicates[name] = PredicateSpec(
            name=name,
            label=text(subject, _RDFS + "label"),
            comment=text(subject, _RDFS + "comment"),
            domain=frozenset(domain),
            range=frozenset(range_),
        )
    return ExtractionSchema(
        types={name: text(NamedNode(TK_NS + name), _RDFS + "comment") for name in sorted(types)},
        predicates=predicates,
    )
