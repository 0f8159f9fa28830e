"""What a tool returns, read from its description when its manifest declares no outputs.

Real MCP servers rarely declare an output schema; their descriptions say what comes back:
"Search for stories and comments on Hacker News", "List Git branches", "Convert an address to
geographic coordinates", "returns pools with their addresses", "lists parks with their park codes".
Three English patterns are read, in the description's first sentences only (the lead says what a
tool does; examples and notes come later):

* a lead producing verb and its object (``List Git branches`` -> git branch), or for a converter
  what it converts *to* (``Convert A to B`` -> B);
* the object of a return verb anywhere in the lead (``returns its precise coordinates``);
* what the results carry (``with their park codes``, ``including its address``), and the form they
  come in (``as a PNG image``, ``base64 encoded``).

Coordinated objects count each (``stories and comments``). Only English and general documentation
conventions; no catalog's words.
"""

from __future__ import annotations

import re
from functools import lru_cache

from toolkg.models import Tool
from toolkg.text.lexicon import GENERIC_NOUNS, OTHER_VERBS, STOP_WORDS, VERB_CAPABILITY
from toolkg.text.words import lemma

LEAD_CHARS = 400
# Lead verbs whose object is what the tool hands back ('add' and 'insert' put a thing somewhere:
# they make nothing new).
PRODUCING_CAPABILITIES = frozenset({"read", "search", "generate", "compute", "analyze"})
MAKING_VERBS = frozenset({"create", "make", "register", "build", "initialize", "init"})
# Lead verbs whose result is what follows 'to' / 'into'.
CONVERTING_CAPABILITIES = frozenset({"convert"})
RETURN_VERBS = frozenset("return returns returning returned yields yield outputs output produces gives".split())
CARRY_PHRASES = (("with", "their"), ("with", "its"), ("with", "the"), ("including",), ("along", "with"))
# Words that open a noun phrase without being its object: "a list of", "all the", "detailed".
LEADING_FILLER = frozenset("a an the its their all list array set collection of some any each new".split())
MAX_OBJECTS = 4
_TOKEN = re.compile(r"[a-z][a-z0-9]*|[.,;:()!?]|[^\sa-z0-9]")
_PREFIX = re.compile(r"^\s*(?:this\s+tool\s+|tool\s+to\s+|use\s+this\s+to\s+|used\s+to\s+)", re.I)


def _lead(text: str) -> list[str]:
    text = _PREFIX.sub("", text[:LEAD_CHARS].lower())
    tokens = _TOKEN.findall(text)
    sentences = 0
    for at, token in enumerate(tokens):
        if token in ".!?":
            sentences += 1
            if sentences == 2:
                return tokens[:at]
    return tokens


def _phrases(tokens: list[str], start: int) -> list[tuple[str, ...]]:
    """Noun phrases from ``start``: words up to a function word or punctuation, joined by and/or/','."""
    found: list[tuple[str, ...]] = []
    run: list[str] = []
    at = start
    while at < len(tokens) and len(found) < MAX_OBJECTS:
        word = tokens[at]
        if not run and word in LEADING_FILLER:
            at += 1
            continue
        following = tokens[at + 1] if at + 1 < len(tokens) else ""
        if word.isalpha() and word.isascii() and word not in STOP_WORDS and not _is_verb(word, run, following):
            run.append(word)
            at += 1
            continue
        if run:
            found.append(tuple(run[-2:]))
            run = []
        if word in ("and", "or", ",") and at + 1 < len(tokens):
            at += 1
            continue
        break
    if run and len(found) < MAX_OBJECTS:
        found.append(tuple(run[-2:]))
    return found


def _is_verb(word: str, run: list[str], following: str) -> bool:
    """A verb ends a phrase. A verb-like word is a noun after a noun ('order status'), in the plural
    ('stories and comments') or before a noun ('commit logs'); a verb before an article ('add the')."""
    if run or lemma(word) != word:
        return False
    verb = word in VERB_CAPABILITY or word in OTHER_VERBS
    return verb and (following in LEADING_FILLER or following in STOP_WORDS or not following.isalpha())


def _key(words: tuple[str, ...]) -> tuple[str, ...]:
    if not words or words[-1] in GENERIC_NOUNS:
        return ()  # 'comprehensive information': an adjective without its noun names nothing
    kept = [w for w in words if w not in GENERIC_NOUNS and not w.endswith("ed") and len(w) > 1]
    if not kept or (len(kept) == 1 and kept[0] in VERB_CAPABILITY):
        return ()
    kept[-1] = lemma(kept[-1])
    return tuple(kept)


@lru_cache(maxsize=250_000)
def described_returns(tool: Tool) -> tuple[tuple[str, ...], ...]:
    """Canonical keys (lemma-headed word tuples) of what a tool's description says it returns."""
    tokens = _lead(tool.description or "")
    if not tokens:
        return ()
    found: list[tuple[str, ...]] = []
    capability = VERB_CAPABILITY.get(lemma(tokens[0]), "")
    if capability in CONVERTING_CAPABILITIES:
        into = next((i for i, w in enumerate(tokens) if w in ("to", "into") and i > 0), None)
        if into is not None:
            found += _phrases(tokens, into + 1)
    elif capability in PRODUCING_CAPABILITIES or lemma(tokens[0]) in MAKING_VERBS:
        start = 1 + (len(tokens) > 1 and tokens[1] in ("for", "up"))
        found += _phrases(tokens, start)
    for at, word in enumerate(tokens):
        if word in RETURN_VERBS and at > 0:
            found += _phrases(tokens, at + 1)
        if word == "as" and at > 0 and tokens[at - 1] not in ("such", "well", "so", "same"):
            found += _phrases(tokens, at + 1)[:1]  # "the canvas as a PNG image", "the content as Markdown"
        if word == "encoded" and at > 0 and tokens[at - 1].isalnum():
            found.append((tokens[at - 1],))  # "(base64 encoded)"
        for phrase in CARRY_PHRASES:
            if tuple(tokens[at : at + len(phrase)]) == phrase:
                found += _phrases(tokens, at + len(phrase))
    keys = (_key(words) for words in found)
    return tuple(dict.fromkeys(k for k in keys if k))[: MAX_OBJECTS * 2]
