"""The words tool names and parameters share across catalogs, read by extraction and inference alike: the
actions a tool's name starts with, by what they yield, and the words that make a parameter an identifier.
General English of tool documentation, never a catalog's own names."""

from __future__ import annotations

from functools import cache

from toolkg.text.words import lemma, split_identifier

# Words that make a parameter an identifier *of* something: 'email_address' is an email.
IDENTIFIER_SUFFIXES = frozenset("id ids uuid code codes key name names number address token handle ref".split())
# The action a tool's name starts (or contains): general English verbs of tool names, by what they yield.
_ACTIONS = {
    "list": "list enumerate",
    "search": "search find query lookup look browse discover searcher finder",
    "get": "get fetch read retrieve show view describe getter inspect",
    "create": "create add new generate make insert upload post put",
    "open": "open navigate connect login launch start init initialize begin load think authenticate signin",
}
ACTION = {word: action for action, words in _ACTIONS.items() for word in words.split()}
# Verbs that say what a tool does to its object, not what the object is: left out of a consumer's entity.
VERBS = frozenset(ACTION) | frozenset("update delete remove set edit modify patch".split())
# Last words of a parameter that identifies something another tool can hand over.
IDENTIFYING = frozenset(IDENTIFIER_SUFFIXES) | frozenset(
    "sha slug number uri url path file filename hash pid uuid index title symbol ticker identifier ref label tag "
    "version account channel user owner repo repository branch package packages ids".split()
)
IDENTIFYING_LEMMAS = frozenset(lemma(w) for w in IDENTIFYING)
# Words after which a tool name says whose or which, not what: list-jobs-for-workflow-run lists jobs.
PREPOSITIONS = frozenset("for by in of from on with to at under within into".split())


def before_preposition(words: list[str]) -> list[str]:
    """A tool name's words up to its first preposition after the first word (what the tool acts on)."""
    cut = next((i for i, w in enumerate(words) if w in PREPOSITIONS and i > 0), len(words))
    return words[:cut]


@cache
def action_of(name: str) -> str:
    """The first action word of a tool name (``search_papers`` -> search), or ``other``."""
    return next((ACTION[w] for w in split_identifier(name) if w in ACTION), "other")
