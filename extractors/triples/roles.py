"""What a parameter identifies and what a tool yields: the two sides of a data flow, as entity types.

A dependency is mostly a join: ``get_comment(comment_id)`` takes the identifier of a *comment*, and
``list_comments`` yields comments (its results carry their ``id``). Both sides are read from the texts, and
the offline extractor states them as ``tk:identifies`` and ``tk:yields`` triples (the LLM extractor's schema
has the same two relations), so an analyst sees the join in SPARQL:

- **identifies** (a parameter): the head noun of its name without the identifier suffix (``comment_id``,
  ``originPlaceId`` -> place, ``pull_number`` -> pull, ``repo`` -> repo); a bare ``id``, ``name`` or ``key``
  identifies the tool's own object (``issues/get-comment(id)`` -> comment).
- **yields** (a tool), from its declared outputs first: every identifier-like output field yields the entity
  its name or its container names (``places[].placeId`` and ``places[].id`` -> place, ``workflow_run_id`` ->
  run, a top-level ``id`` -> the tool's own object); a tool that lists, searches, gets, creates or opens
  something yields its object (``search_flights`` -> flight) even when it declares no output.

The entity types are the extractor's business objects: the canonicalize stage merges their spellings across
the catalog (reversibly), as it does every entity's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from toolkg.models import Parameter, Tool
from toolkg.text.lexicon import GENERIC_NOUNS, GENERIC_PARAMETERS, STOP_WORDS
from toolkg.text.tool_words import IDENTIFIER_SUFFIXES, IDENTIFYING, VERBS, action_of, before_preposition
from toolkg.text.words import lemma, split_identifier

PRODUCING_ACTIONS = frozenset({"list", "search", "get", "create", "open"})
# Last words that say "the identifier of" what comes before them (``comment_id``, ``team_slug``).
SUFFIXES = frozenset(IDENTIFIER_SUFFIXES) | frozenset("sha slug hash uuid identifier pid ids".split())
# Filler words and identifier suffixes name no entity; a generic parameter word (run, content, index) does
# inside a longer name (``workflow_run_id``), never alone.
_FILLER = frozenset(GENERIC_NOUNS) | frozenset(STOP_WORDS)
_IGNORED = _FILLER | frozenset(IDENTIFIER_SUFFIXES)  # a lone 'key' or 'name' names nothing; 'key_id' a key


@dataclass(frozen=True, slots=True)
class Identified:
    """What a parameter identifies, and whether its name said it (else it is the tool's own object)."""

    entity: str
    named: bool


def _raw(text: str) -> list[str]:
    return [w.lower() for w in split_identifier(text)]


def _suffixed(raw: list[str]) -> bool:
    """Whether a name's last word says "the identifier of" what comes before it (``comment_id``, ``teamSlug``)."""
    return bool(raw) and (raw[-1] in SUFFIXES or (len(raw[-1]) > 2 and raw[-1].endswith("id")))


def is_identifier_name(name: str) -> bool:
    """``comment_id``, ``sha``, ``placeId``, ``path``: a name whose last word identifies something."""
    raw = _raw(name)
    return bool(raw) and (raw[-1] in IDENTIFYING or name.lower().endswith("id"))


def _content(raw: Iterable[str], ignored: frozenset[str] | None = None) -> list[str]:
    ignored = _IGNORED if ignored is None else ignored
    return [lemma(w) for w in raw if len(w) > 1 and w not in ignored and w not in VERBS]


@cache
def object_of(tool_name: str) -> str:
    """A tool's object: the last content word of its name without its verbs, before any preposition
    (``issues/list-comments`` -> comment, ``list-jobs-for-workflow-run`` -> job, ``repos/list-for-org`` ->
    repo); '' when the name has none."""
    raw = _raw(tool_name)
    words = _content(before_preposition(raw)) or _content(raw)
    return words[-1] if words else ""


@cache
def _identifies(parameter_name: str, tool_name: str) -> Identified | None:
    raw = _raw(parameter_name)
    if not raw or all(w in GENERIC_PARAMETERS for w in raw):
        return None  # a query, a limit, a text: the caller's to write
    suffixed = _suffixed(raw)
    words = _content(raw[:-1], _FILLER) if suffixed else _content(raw)
    if words:
        return Identified(words[-1], True)
    own = object_of(tool_name)  # a bare id, name or key: the tool's own object
    return Identified(own, False) if own and suffixed else None


def identifies(tool: Tool, parameter: Parameter) -> Identified | None:
    """The entity a parameter identifies, or None (a free text, a flag)."""
    return _identifies(parameter.name, tool.name)


def _field_entities(path: str, own: str) -> list[str]:
    """The entities an identifier-like output field carries: its name's head (``placeId`` -> place, ``path``),
    and its container's (``files[].path`` -> file), else the tool's own object (a top-level ``id``)."""
    segments = [s.replace("[]", "") for s in path.split(".")]
    raw = _raw(segments[-1])
    found = (_content(raw[:-1], _FILLER) if _suffixed(raw) else _content(raw))[-1:]
    for container in reversed(segments[:-1]):
        words = _content(_raw(container))
        if words:
            found.append(words[-1])
            break
    return found or ([own] if own else [])


@cache
def _yields(tool_name: str, outputs: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    own = object_of(tool_name)
    found: dict[str, str] = {}
    for path in outputs:
        if is_identifier_name(path.rsplit(".", 1)[-1].replace("[]", "")):
            for entity in _field_entities(path, own):
                found.setdefault(entity, path)
    if own and action_of(tool_name) in PRODUCING_ACTIONS:
        found.setdefault(own, "")
    return tuple(found.items())


def yields(tool: Tool) -> dict[str, str]:
    """Entity -> the output field that carries it ('' when only the tool's name says it yields it). An entity
    the tool must be given the identifier of is no yield: it hands back what it was given (``cancel_order
    (order_id)`` returns that order), unless it makes one (``create_...``)."""
    found = dict(_yields(tool.name, tuple(o.name for o in tool.outputs)))
    if action_of(tool.name) != "create":
        for parameter in tool.parameters:
            if parameter.required and is_identifier_name(parameter.name):
                given = identifies(tool, parameter)
                if given is not None and given.named:
                    found.pop(given.entity, None)
    return found
