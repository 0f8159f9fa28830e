"""The offline extractor (the default): deterministic rules over the structured manifest.

No network, no model download. For each tool:

- its name splits into an action and an object: ``get_stock_price`` -> action ``get``,
  business object ``stock price``; a name without a verb borrows the description's lead verb;
- the action's verb class is its capability (read, search, create, update, delete, send...);
- noun phrases of the description (runs of content words, cut at verbs, stop words and
  punctuation; generic words like "information" trimmed) are further business objects;
- each parameter that names something (``customer_id`` -> customer) refers to that entity, and one that
  identifies something identifies it (a bare ``id`` of ``get_order`` identifies an order), and the tool yields
  the objects its results carry (``roles.py``);
- the server's category (or, lacking one, its name) is the tool's line of business.

Text not written in a Latin script (a Chinese description, say) yields no phrases: the
tool keeps what its names and types give, and the extraction carries a note saying so.

>>> from toolkg.models import Parameter, Server, Tool
>>> tool = Tool(server_id="fin", name="get_stock_prices",
...             description="Retrieves the latest closing prices for a ticker symbol on an exchange.",
...             parameters=(Parameter(name="ticker_symbol"), Parameter(name="limit")))
>>> result = OfflineExtractor().extract(tool, Server(id="fin", name="fin", category="Finance"))
>>> result.action
'get'
>>> [(t.relation, t.tail) for t in result.triples]  # doctest: +NORMALIZE_WHITESPACE
[('hasCapability', 'read'), ('yields', 'price'), ('identifies', 'symbol'), ('hasEntity', 'stock price'),
 ('hasEntity', 'ticker symbol'), ('hasEntity', 'closing price'), ('hasEntity', 'exchange'),
 ('refersTo', 'ticker symbol'), ('hasLineOfBusiness', 'Finance')]
"""

from __future__ import annotations

import re

from toolkg.extractors.triples.models import (
    MAX_TRIPLES,
    ExtractionProvenance,
    ToolContext,
    ToolExtraction,
    check_triple,
    input_hash,
    response_model,
    to_extracted,
    tool_document,
)
from toolkg.extractors.triples.roles import identifies, is_identifier_name, yields
from toolkg.models import Server, Tool
from toolkg.text.lexicon import (
    DETERMINERS,
    GENERIC_NOUNS,
    GENERIC_PARAMETERS,
    OTHER_VERBS,
    PARAMETER_SUFFIXES,
    PHRASAL_VERBS,
    STOP_WORDS,
    VERB_CAPABILITY,
)
from toolkg.text.words import (
    clean_label,
    dominant_script,
    entity_name,
    has_letter,
    is_english_script,
    lemma,
    nlp,
    split_identifier,
)

NAME = "offline"
VERSION = "2"  # 2: identifies and yields
MAX_PHRASE_WORDS = 3
MAX_DESCRIPTION_OBJECTS = 4
MAX_YIELDS = 8
MAX_PARAMETER_LINKS = 16  # keeps a 40-parameter API call inside the response model's triple cap
DESCRIPTION_CHARS = 600  # the lead of a description says what the tool is about; examples come later
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_PARENTHESES = re.compile(r"\([^()]*\)")


def name_action(words: list[str]) -> tuple[int, str]:
    """(position, lemma) of the name's first action verb: it may follow a brand or server prefix
    (temu_checkout_cart, mcp_howtocook_getAllRecipes) or end a nominal name (frontier_user_login)."""
    for at, word in enumerate(words):
        if lemma(word) in VERB_CAPABILITY:
            return at, lemma(word)
    return -1, ""


def description_action(text: str) -> str:
    """The lemma of a description's lead verb, phrasal verbs understood ('Logs the user in' -> login)."""
    words = [t.text for t in nlp().make_doc(text[:200].lower()) if t.is_alpha][:6]
    if not words:
        return ""
    verb = lemma(words[0])
    for particle in words[1:]:
        if (verb, particle) in PHRASAL_VERBS:
            return PHRASAL_VERBS[verb, particle]
    return verb if verb in VERB_CAPABILITY else ""


def name_object_words(words: list[str], verb_at: int) -> list[str]:
    """What the name says the tool acts on: the words after its verb up to the first function word
    (get_spending_by_country -> spending), or those before a trailing verb (user_login -> user)."""
    after = words[verb_at + 1 :] if verb_at >= 0 else words
    before = words[:verb_at] if verb_at > 0 else []
    for segment in (after, before):
        kept: list[str] = []
        for word in segment:
            if word in STOP_WORDS:
                if kept:
                    break
                continue
            kept.append(word)
        kept = _trim(kept)
        if kept:
            return kept
    return []


def _trim(words: list[str]) -> list[str]:
    """Drop generic words at both edges and keep the last few (the head noun comes last in English)."""
    while words and words[0] in GENERIC_NOUNS:
        words = words[1:]
    while words and words[-1] in GENERIC_NOUNS:
        words = words[:-1]
    return words[-MAX_PHRASE_WORDS:]


def noun_phrases(text: str) -> list[str]:
    """Candidate business objects in English text, in order of first appearance."""
    lead = _SENTENCE_END.split(_PARENTHESES.sub(" ", text[:DESCRIPTION_CHARS]))  # "(e.g., YYYY-MM-DD)" is an example
    phrases: list[str] = []

    def flush(run: list[str]) -> None:
        words = _trim(run)
        if words and not (len(words) == 1 and len(words[0]) < 3):
            phrase = entity_name(" ".join(words))
            if phrase not in phrases:
                phrases.append(phrase)
        run.clear()

    for sentence in lead[:3]:
        run: list[str] = []
        previous = ""
        for token in nlp().make_doc(sentence.lower()):
            word = token.text
            if not token.is_alpha or token.is_stop or word.endswith("ly") or previous == "to" or not word.isascii():
                flush(run)  # "to visualize": an infinitive, whatever the word
            elif word.endswith(("ing", "ed")) and len(word) > 4:
                # a participle inside a phrase modifies it ("closing price"); leading one, it is a verb
                if run or previous in DETERMINERS:
                    run.append(word)
                else:
                    flush(run)
            elif lemma(word) in VERB_CAPABILITY or lemma(word) in OTHER_VERBS:
                # A noun here: "the search", or the base form after a noun ("email address", "order status").
                if (previous in DETERMINERS and not run) or (run and word == lemma(word)):
                    run.append(word)
                else:
                    flush(run)
            else:
                run.append(word)
            previous = word
        flush(run)
    return phrases


def parameter_entity(name: str) -> str:
    """The entity a parameter name refers to ('customer_id' -> 'customer'), '' for generic names."""
    words = split_identifier(name)
    if not words or not is_english_script(name):
        return ""
    if len(words) > 1 and words[-1] in PARAMETER_SUFFIXES:
        words = words[:-1]
    if len(words) == 1 and (words[0] in GENERIC_PARAMETERS or words[0] in PARAMETER_SUFFIXES):
        return ""
    words = _trim([w for w in words if not w.isdigit()])
    if not words or (len(words) == 1 and len(words[0]) < 3):
        return ""
    return entity_name(" ".join(words))


class OfflineExtractor:
    """Deterministic rule-based triples; no network. Thread-safe."""

    name = NAME
    version = VERSION

    def key(self) -> str:
        """What the result depends on besides the input (part of every manifest's fingerprint)."""
        return VERSION

    def extract(self, tool: Tool, server: Server) -> ToolExtraction:
        notes: list[str] = []
        triples: list[dict[str, str]] = []

        def add(head: str, head_type: str, relation: str, tail: str, tail_type: str) -> None:
            triples.append(
                {"head": head, "head_type": head_type, "relation": relation, "tail": tail, "tail_type": tail_type}
            )

        name_words = split_identifier(tool.name) if is_english_script(tool.name) else []
        if tool.name and not name_words:
            notes.append(f"tool name is not in a Latin script ({dominant_script(tool.name)}): no object from it")
        english = is_english_script(tool.description)
        if not english:
            notes.append(
                f"description is not English ({dominant_script(tool.description)} script): "
                "entities come from names and types only"
            )
        verb_at, action = name_action(name_words)
        if not action and english:
            action = description_action(tool.description)
        if action:
            add(tool.name, "Tool", "hasCapability", VERB_CAPABILITY[action], "Capability")
        else:
            notes.append("no action verb in the name or the description's first words")
        # the two sides of a data flow first: the triple cap never cuts them for a long description
        if name_words:
            for entity in list(yields(tool))[:MAX_YIELDS]:
                add(tool.name, "Tool", "yields", entity_name(entity), "BusinessObject")
            for parameter in tool.parameters[:MAX_PARAMETER_LINKS]:
                # a value picked out of others (an id, a path, a symbol), not one the caller makes up (a period)
                identified = identifies(tool, parameter) if is_identifier_name(parameter.name) else None
                entity = entity_name(identified.entity) if identified is not None else ""
                if entity:
                    add(parameter.name, "Parameter", "identifies", entity, "BusinessObject")

        objects: list[str] = []
        name_object = name_object_words(name_words, verb_at)
        if name_object:
            objects.append(entity_name(" ".join(name_object)))
        parameter_links = [(p.name, parameter_entity(p.name)) for p in tool.parameters[:MAX_PARAMETER_LINKS]]
        objects += [entity for _, entity in parameter_links if entity]
        if english and tool.description:
            objects += noun_phrases(tool.description)[:MAX_DESCRIPTION_OBJECTS]
        for entity in dict.fromkeys(o for o in objects if o):
            add(tool.name, "Tool", "hasEntity", entity, "BusinessObject")
        for parameter_name, entity in parameter_links:
            if entity:
                add(parameter_name, "Parameter", "refersTo", entity, "BusinessObject")
        category = clean_label(server.category or "")
        if has_letter(category):
            add(tool.name, "Tool", "hasLineOfBusiness", category, "LineOfBusiness")
        elif server.category:
            notes.append("server category has no letters: no line of business")
        else:  # a file or server name is no line of business: leave it to a reader (or the LLM extractor)
            notes.append("server has no category: no line of business")

        context = ToolContext(name=tool.name, parameters=tuple(p.name for p in tool.parameters))
        # The names above are built to pass the ontology's checks; any that still would not is dropped
        # (and noted) here, so the extractor never hands on what its own response model refuses.
        kept = []
        for t in triples[:MAX_TRIPLES]:
            try:
                check_triple(t["head"], t["head_type"], t["relation"], t["tail"], t["tail_type"], context)
                kept.append(t)
            except ValueError as exc:
                notes.append(f"triple dropped: {exc}")
        reply = response_model().model_validate({"triples": kept}, context={"tool": context})
        return ToolExtraction(
            tool_id=tool.id,
            triples=to_extracted(reply),
            provenance=ExtractionProvenance(
                extractor=NAME, extractor_version=VERSION, input_hash=input_hash(tool_document(tool, server))
            ),
            action=action,
            notes=tuple(notes),
        )
