"""Entity canonicalization: one node per real-world thing, merges recorded and reversible.

Two steps. *Normalisation* happens when a triple is turned into RDF (``extractors.text.entity_name``):
case, punctuation, snake/camel splits and the head lemma — "Suppliers", "supplier", "SUPPLIER"
become the same IRI, other spellings its ``skos:altLabel``. *Fuzzy clustering* (here) runs over
the whole store after each build: entities of the same type whose labels are near-identical
("e-mail address" / "email address") are merged into one canonical entity.

Merges live in their own graph (``…/graph/canonical-entities``): ``member tk:canonicalEntity
canonical``, the member's label as the canonical's ``skos:altLabel``, and a ``tk:EntityMerge``
record with the method and score. Entity IRIs never change; dropping that graph undoes every
merge. A canonical entity stays canonical on later runs while it is still in its cluster.

Clustering never compares every pair: labels are blocked by their words and by a spelling
skeleton (letters only, first 4), and ``rapidfuzz.process.extract`` scores each label against its
block. Short or low-information labels, and labels whose numbers differ (ipv4 / ipv6), are never
fuzzy-merged.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict
from pyoxigraph import Literal, NamedNode, Triple
from rapidfuzz import fuzz, process

from toolkg.config import EntityOptions
from toolkg.ontology import RDF, SKOS, TK, XSD, iris
from toolkg.ontology.graphs import CANONICAL_GRAPH
from toolkg.ontology.schema import ENTITY_TYPES
from toolkg.text.lexicon import GENERIC_NOUNS

_DIGITS = re.compile(r"\d+")
_NEGATIONS = ("un", "de", "dis", "non", "in", "re")


class Entity(BaseModel):
    model_config = ConfigDict(frozen=True)

    iri: str
    type: str
    label: str
    tools: int = 0  # how many tools mention it: the most used member becomes canonical
    canonical_before: bool = False


class Merge(BaseModel):
    model_config = ConfigDict(frozen=True)

    member: Entity
    canonical: Entity
    method: str
    score: float


def _letters(label: str) -> str:
    return re.sub(r"[^a-z]", "", label.lower())


def mergeable(a: str, b: str, options: EntityOptions) -> bool:
    """Guards against over-merging, checked before any score counts."""
    if min(len(_letters(a)), len(_letters(b))) < options.min_length:
        return False
    if _DIGITS.findall(a) != _DIGITS.findall(b):
        return False
    if _letters(a) == _letters(b):
        return _informative(a)  # only spacing differs: "e mail address" / "email address", "time zone"
    words_a, words_b = set(a.split()), set(b.split())
    if words_a != words_b and (words_a <= words_b or words_b <= words_a):
        return False  # one adds a word to the other: a more specific thing ("target temperature c")
    if any(len(w) <= 2 for w in words_a ^ words_b):
        return False  # "axis x title" / "axis y title": a one- or two-letter word is the whole difference
    for x in words_a ^ words_b:
        if any(x == prefix + y or y == prefix + x for y in words_a ^ words_b for prefix in _NEGATIONS):
            return False  # "unprotect document" is the opposite of "protect document"
    return _informative(a) and _informative(b)


def _informative(label: str) -> bool:
    return any(w not in GENERIC_NOUNS for w in label.split())


def _blocks(labels: list[str], options: EntityOptions) -> dict[str, list[int]]:
    blocks: dict[str, list[int]] = defaultdict(list)
    for i, label in enumerate(labels):
        keys = {f"w:{w}" for w in label.split() if len(w) >= 4}
        keys.add(f"s:{_letters(label)[:4]}")
        for key in keys:
            blocks[key].append(i)
    return {k: v for k, v in blocks.items() if 1 < len(v) <= options.max_block}


def cluster(entities: list[Entity], options: EntityOptions | None = None) -> list[Merge]:
    """Fuzzy merges among entities of one type (union-find over blocked candidate pairs)."""
    options = options or EntityOptions()
    labels = [e.label for e in entities]
    parent = list(range(len(entities)))
    best: dict[int, float] = {}  # an entity's best score with any label it merged with

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for members in _blocks(labels, options).values():
        choices = {j: labels[j] for j in members}
        for i in members:
            for _, score, j in process.extract(
                labels[i], choices, scorer=fuzz.token_sort_ratio, score_cutoff=options.threshold, limit=None
            ):
                if j <= i or not mergeable(labels[i], labels[j], options):
                    continue
                if " " not in labels[i] + labels[j] and score < options.single_word_threshold:
                    continue  # one word each: "provider" / "provide" is not a spelling variant
                best[i] = max(best.get(i, 0.0), score)
                best[j] = max(best.get(j, 0.0), score)
                parent[find(j)] = find(i)
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(entities)):
        groups[find(i)].append(i)
    merges = []
    for members in groups.values():
        if len(members) < 2:
            continue
        ranked = sorted(
            members,
            key=lambda i: (not entities[i].canonical_before, -entities[i].tools, len(labels[i]), labels[i]),
        )
        head = ranked[0]
        for i in ranked[1:]:
            score = best.get(i, options.threshold)  # looked up, not scanned: the scan grew with the catalog squared
            merges.append(
                Merge(member=entities[i], canonical=entities[head], method="fuzzy:token_sort_ratio", score=score)
            )
    return merges


def stored_entities(store) -> list[Entity]:
    """Every typed entity in the store with its label, tool count and current canonical status."""
    # Type and label are joined inside each graph: an entity lives in the extraction graph of every
    # tool naming it, and a join across the union would pair each of its k copies with all k others.
    rows = store.select(
        """SELECT DISTINCT ?e ?type ?label WHERE { GRAPH ?g { ?e a ?type ; rdfs:label ?label }
            VALUES ?type { tk:BusinessObject tk:Capability tk:LineOfBusiness tk:Department } }"""
    )
    # Counted with fixed predicates: a variable predicate over the union graph is far slower.
    counts = {
        r["e"].value: int(r["n"].value)
        for r in store.select(
            """SELECT ?e (COUNT(DISTINCT ?tool) AS ?n) WHERE {
                ?tool tk:hasEntity|tk:hasCapability|tk:hasLineOfBusiness|tk:usedBy ?e } GROUP BY ?e"""
        )
    }
    previous = {
        r["c"].value
        for r in store.select(f"SELECT DISTINCT ?c WHERE {{ GRAPH {CANONICAL_GRAPH} {{ ?m tk:canonicalEntity ?c }} }}")
    }
    out: dict[str, Entity] = {}
    for r in rows:
        iri = r["e"].value
        if iri not in out:  # one label per entity (the canonical one is minted from it)
            out[iri] = Entity(
                iri=iri,
                type=r["type"].value.rsplit("#", 1)[1],
                label=r["label"].value,
                tools=counts.get(iri, 0),
                canonical_before=iri in previous,
            )
    return sorted(out.values(), key=lambda e: (e.type, e.label))


def merge_triples(merges: Iterable[Merge]) -> list[Triple]:
    out = []
    for m in merges:
        member, canonical = NamedNode(m.member.iri), NamedNode(m.canonical.iri)
        record = NamedNode(f"{iris.BASE}merge/{iris.short_hash(m.member.iri)}")
        out += [
            Triple(member, TK.canonicalEntity, canonical),
            Triple(canonical, SKOS.altLabel, Literal(m.member.label)),
            Triple(record, RDF.type, TK.EntityMerge),
            Triple(record, TK.mergedEntity, member),
            Triple(record, TK.mergedInto, canonical),
            Triple(record, TK.mergeMethod, Literal(m.method)),
            Triple(record, TK.mergeScore, Literal(f"{m.score:.1f}", datatype=XSD.decimal)),
        ]
    return out


def canonicalize_store(store, options: EntityOptions | None = None) -> dict[str, object]:
    """Cluster every entity type and swap the canonical-entities graph."""
    entities = stored_entities(store)
    by_type: dict[str, list[Entity]] = defaultdict(list)
    for e in entities:
        by_type[e.type].append(e)
    merges = [m for kind in ENTITY_TYPES for m in cluster(by_type.get(kind, []), options)]
    store.replace_graph(CANONICAL_GRAPH, merge_triples(merges))
    sizes: dict[str, list[str]] = defaultdict(list)
    for m in merges:
        sizes[m.canonical.label].append(m.member.label)
    largest = sorted(sizes.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:5]
    return {
        "entities": len(entities),
        "by_type": {k: len(v) for k, v in sorted(by_type.items())},
        "clusters": len(sizes),
        "merged": len(merges),
        "largest": [[label, len(members) + 1, members[:5]] for label, members in largest],
    }
