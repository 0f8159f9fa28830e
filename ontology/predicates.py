"""Predicate canonicalization: a relation as a model writes it -> the ontology predicate, or nothing.

A synonym table first (exact, after normalising case, punctuation and snake/camel case), then
rapidfuzz against the predicates and their synonyms. What maps nowhere is reported and never
invented: the LLM's response model turns it into a validation error, so the model is re-asked.

>>> map_predicate("has_entity"), map_predicate("Works For"), map_predicate("belongs to domain")
(('hasEntity', 'exact', 100.0), ('usedBy', 'synonym', 100.0), ('hasLineOfBusiness', 'synonym', 100.0))
>>> map_predicate("is married to")
(None, 'unmapped', 0.0)
"""

from __future__ import annotations

from functools import cache

from rapidfuzz import fuzz, process

from toolkg.ontology.schema import extraction_schema
from toolkg.text.words import split_identifier

FUZZY_CUTOFF = 88.0

# Phrasings models use for the ontology's predicates (normalised: lower case, single spaces).
SYNONYMS: dict[str, tuple[str, ...]] = {
    "hasEntity": ("acts on", "operates on", "manages", "handles", "works with", "entity", "has object", "uses"),
    "hasParameter": ("takes", "accepts", "has input", "input", "parameter", "has argument", "requires parameter"),
    "hasCapability": ("can", "performs", "capability", "has action", "does", "action"),
    "hasLineOfBusiness": ("belongs to domain", "in domain", "domain", "category", "line of business", "industry"),
    "usedBy": ("works for", "employed by", "works at", "serves", "used by department", "department"),
    "refersTo": ("identifies", "references", "refers", "points to", "is id of", "denotes"),
    "relatedTo": ("associated with", "related", "linked to", "connected to"),
    "contains": ("includes", "has part", "consists of", "comprises"),
    "assignedTo": ("owned by", "assigned", "responsibility of", "handled by"),
}


def _normal(text: str) -> str:
    return " ".join(split_identifier(text))


@cache
def _table() -> dict[str, str]:
    table = {}
    for name in extraction_schema().predicates:
        table[_normal(name)] = name
    for name, phrases in SYNONYMS.items():
        if name in extraction_schema().predicates:
            for phrase in phrases:
                table.setdefault(_normal(phrase), name)
    return table


def map_predicate(text: str) -> tuple[str | None, str, float]:
    """(ontology predicate or None, method: exact | synonym | fuzzy | unmapped, score)."""
    if text in extraction_schema().predicates:
        return text, "exact", 100.0
    key = _normal(text)
    table = _table()
    if key in table:
        method = "exact" if _normal(table[key]) == key else "synonym"
        return table[key], method, 100.0
    found = process.extractOne(key, list(table), scorer=fuzz.ratio, score_cutoff=FUZZY_CUTOFF)
    if found:
        return table[found[0]], "fuzzy", round(found[1], 1)
    return None, "unmapped", 0.0
