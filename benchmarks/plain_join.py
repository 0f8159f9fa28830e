"""The plain typed join: the naive baseline toolkg's dependency inference must beat on every catalog.

No labels, no fitting, no learned judge: a consumer's identifying parameter is joined to the tools of its own
server that yield the entity the parameter names, or that declare an output field of the parameter's own name.

- A parameter identifies an entity when its name ends in an identifier suffix (id, ids, address, key, code,
  slug, uuid, number): the words before the suffix, singular (``walletAddress`` -> wallet, ``invoice_id`` ->
  invoice); a bare ``id`` identifies the tool's own object (the last noun of its name).
- A tool yields an entity when its name lists it after a list/search/find/get/browse/create verb
  (``getOpenInvoices`` -> invoice), when its declared output carries it (an array field's singular name, or a
  field that is itself an identifier of the entity, two levels deep), and it yields every declared output field
  name.
- An edge joins a consumer's slot to every other tool of its server that yields the slot's entity, or that
  declares an output field of the parameter's exact, non-generic name (one that at most a quarter of the
  server's tools with outputs declare); the strongest evidence kind per slot wins (the name lists it > the
  output carries it > the same field name), at most four producers a slot.

toolkg's manifest reader resolves ``$ref``s, so a referenced component's name is not seen here (the issue's
join also read those): this join sees what ``models.Tool`` holds.

    python -m benchmarks.plain_join            # its edges' counts on every label set
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from toolkg.text.words import lemma, split_identifier

SUFFIXES = frozenset("id ids address key code slug uuid number".split())
LISTING_VERBS = frozenset("list search find get browse create".split())
PREPOSITIONS = frozenset("for by in of from on with to at".split())
NAME_LISTS, OUTPUT_CARRIES, SAME_FIELD = 3, 2, 1  # evidence kinds, strongest first
EVIDENCE = {
    NAME_LISTS: "the producer's name lists it",
    OUTPUT_CARRIES: "its output carries it",
    SAME_FIELD: "same field",
}
MAX_PRODUCERS = 4
GENERIC_SHARE = 0.25  # a field name more than this share of a server's tools declare says nothing of an entity


@dataclass(frozen=True)
class JoinEdge:
    consumer: str
    producer: str
    parameter: str
    entity: str
    evidence: str


def _singular(words: list[str]) -> str:
    return " ".join(lemma(w) for w in words)


def slot_entity(parameter: str, tool_name: str) -> str | None:
    """The entity an identifying parameter names, or None when its name ends in no identifier suffix."""
    words = split_identifier(parameter)
    if not words or words[-1] not in SUFFIXES:
        return None
    if len(words) == 1:
        return own_object(tool_name)
    return _singular(words[:-1])


def own_object(tool_name: str) -> str | None:
    """The last noun of a tool's name before any preposition: ``get_invoice_by_number`` -> invoice."""
    words = split_identifier(tool_name)
    cut = next((i for i, w in enumerate(words) if w in PREPOSITIONS and i > 0), len(words))
    nouns = [w for w in words[:cut] if w not in LISTING_VERBS and not w.isdigit()]
    return lemma(nouns[-1]) if nouns else None


def listed_entities(tool_name: str) -> set[str]:
    """What a tool's name lists after a listing verb: the phrase and its last noun, singular."""
    words = split_identifier(tool_name)
    verbs = [i for i, w in enumerate(words) if w in LISTING_VERBS]
    if not verbs:
        return set()
    after = words[verbs[0] + 1 :]
    cut = next((i for i, w in enumerate(after) if w in PREPOSITIONS), len(after))
    phrase = [w for w in after[:cut] if not w.isdigit()]
    return {_singular(phrase[i:]) for i in range(len(phrase))} if phrase else set()


def output_entities(tool) -> set[str]:
    """Entities a tool's declared output carries, two levels deep: an array field's singular name, and the
    entity any identifying output field names."""
    found = set()
    for field in tool.outputs:
        path = field.name.split(".")
        if len(path) > 2:
            continue
        for part in path:
            if part.endswith("[]"):
                found.add(_singular(split_identifier(part[:-2])))
        last = path[-1].removesuffix("[]")
        entity = slot_entity(last, tool.name)
        if entity:
            found.add(entity)
    return found


def output_names(tool) -> set[str]:
    return {field.name.split(".")[-1].removesuffix("[]") for field in tool.outputs}


def plain_join(tools: list) -> list[JoinEdge]:
    """Every edge the plain typed join makes over a catalog of ``models.Tool``."""
    by_server: dict[str, list] = defaultdict(list)
    for tool in tools:
        by_server[tool.server_id].append(tool)
    edges: list[JoinEdge] = []
    for server_tools in by_server.values():
        yields = {t.id: listed_entities(t.name) for t in server_tools}
        carries = {t.id: output_entities(t) for t in server_tools}
        names = {t.id: output_names(t) for t in server_tools}
        declaring = [t for t in server_tools if t.outputs]
        counts = Counter(name for t in declaring for name in names[t.id])
        generic = {n for n, c in counts.items() if c > max(1, GENERIC_SHARE * len(declaring))}
        for consumer in server_tools:
            for parameter in consumer.parameters:
                entity = slot_entity(parameter.name, consumer.name)
                candidates: list[tuple[int, str]] = []
                for producer in server_tools:
                    if producer.id == consumer.id:
                        continue
                    if entity and entity in yields[producer.id]:
                        candidates.append((NAME_LISTS, producer.id))
                    elif entity and entity in carries[producer.id]:
                        candidates.append((OUTPUT_CARRIES, producer.id))
                    elif parameter.name in names[producer.id] and parameter.name not in generic:
                        candidates.append((SAME_FIELD, producer.id))
                if not candidates:
                    continue
                strongest = max(kind for kind, _ in candidates)
                chosen = sorted(pid for kind, pid in candidates if kind == strongest)[:MAX_PRODUCERS]
                for pid in chosen:
                    edges.append(
                        JoinEdge(consumer.id, pid, parameter.name, entity or parameter.name, EVIDENCE[strongest])
                    )
    return edges


if __name__ == "__main__":
    from benchmarks.label_sets import LABEL_SETS, label_set_tools

    for name in LABEL_SETS:
        made = plain_join(label_set_tools(name))
        print(f"{name}: {len(made)} edges over {len({(e.consumer, e.producer) for e in made})} pairs")
