"""What dependency inference reads of a tool: its profile (name action and object, lemmas, namespace)
and what it offers other tools' parameters. Shared by the rules (infer.py) and the mention rule
(mentions.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from toolkg.canonicalize.inference.calibration import CONFIDENCE
from toolkg.canonicalize.inference.returns import described_returns
from toolkg.extractors.triples.offline import description_action, name_action, name_object_words
from toolkg.models import Tool
from toolkg.ontology.vocabulary import kind
from toolkg.text.lexicon import ABBREVIATIONS, FORM_HEADS, GENERIC_NOUNS, GENERIC_PARAMETERS, VERB_CAPABILITY
from toolkg.text.tool_words import IDENTIFIER_SUFFIXES, before_preposition
from toolkg.text.words import lemma, split_identifier

# Adjectives that make a producer's object contextual ('current location' is the location).
CONTEXT_WORDS = frozenset("current system user device my local default active present today latest".split())
# Values derivable from another (a date gives its year): general knowledge of common types.
DERIVABLE = {
    "date": {"year", "month", "day", "weekday", "week"},
    "time": {"hour", "minute"},
    "location": {"latitude", "longitude", "lat", "lon", "lng", "coordinate", "region", "place", "city", "country"},
    "coordinate": {"latitude", "longitude", "lat", "lon", "lng"},
    "address": {"city", "country", "street", "postcode", "zip", "region"},
}
DERIVERS: dict[str, list[str]] = {}
for _parent, _children in DERIVABLE.items():
    for _child in _children:
        DERIVERS.setdefault(_child, []).append(_parent)
# What authenticating produces, whatever the service.
SESSION_WORDS = frozenset({"session", "token", "auth", "credential", "cookie"})
GENERIC_KEYS = GENERIC_NOUNS | GENERIC_PARAMETERS | IDENTIFIER_SUFFIXES | CONTEXT_WORDS
STATUS_WORDS = frozenset({"status", "state", "availability", "enabled", "mode"})
# A status check whose text says it is about one of these is a connectivity check.
CONNECTIVITY_WORDS = frozenset({"connectivity", "internet", "network", "online", "connection"})
# Capabilities that work on what the tool is given, with no outside service to reach.
LOCAL_CAPABILITIES = frozenset({"compute", "convert", "analyze"})

PARAMETER_DIRECT = kind("parameterDirectlyDependsOn")
PARAMETER_INDIRECT = kind("parameterIndirectlyDependsOn")
TOOL_DIRECT = kind("toolDirectlyDependsOn")
TOOL_INDIRECT = kind("toolIndirectlyDependsOn")


@dataclass
class Offer:
    key: tuple[str, ...]  # canonical words
    how: str
    contextual: bool  # a context getter: no required input
    described: bool = False  # read from the description's prose, not from a name or a schema
    of_record: bool = False  # one field of a record returned whole, not what the tool is for


@dataclass
class Profile:
    tool: Tool
    words: list[str]
    action: str
    capability: str
    object_words: list[str]
    text_lemmas: set[str] = field(default_factory=set)
    namespace: set[str] = field(default_factory=set)  # rare name tokens: the service a tool belongs to
    offered: list[Offer] | None = None  # what ``offers`` found (profiles are memoised, so is this)
    # read once: the rules and the index ask for them hundreds of thousands of times
    id: str = field(init=False)  # the tool's id
    needs_input: bool = field(init=False)  # the tool has a required parameter

    def __post_init__(self) -> None:
        self.id = self.tool.id
        self.needs_input = any(q.required for q in self.tool.parameters)

    @property
    def is_status_check(self) -> bool:
        """Reads the status of something and needs no input: get_bluetooth_status."""
        return self.capability == "read" and not self.needs_input and bool(STATUS_WORDS & set(self.object_words))


# Words that make a parameter where a tool puts its result: the caller chooses it, no tool feeds it.
OUTPUT_WORDS = frozenset({"output", "out", "destination", "dest", "dst", "target", "save", "export"})


@lru_cache(maxsize=250_000)
def is_output_location(param_name: str) -> bool:
    """``outputDir``, ``destination_filename``, ``save_path``: where the result goes, not an input."""
    return bool(OUTPUT_WORDS & set(split_identifier(param_name)))


# Verbs of a tool that makes something new where, or under the name, the caller says.
MAKING_VERBS = frozenset({"create", "new", "make", "generate", "write", "save", "mkdir", "touch"})
CREATING_VERBS = frozenset({"create", "new", "make", "generate", "mkdir"})  # a new thing, not a new version
FILE_NOUNS = frozenset({"file", "files", "directory", "dir", "folder"})
# Lone words for where, or under what name, a new file or folder goes.
PLACE_WORDS = frozenset({"path", "file", "filename", "filepath", "name", "dir", "directory", "folder"})
_NAMING = frozenset({"name", "id"})


@lru_cache(maxsize=250_000)
def _making(tool_name: str) -> tuple[bool, bool, tuple[str, ...]]:
    """(it writes or creates, it creates, what it makes: its name's words before any preposition)."""
    verbs = [w.lower() for w in split_identifier(tool_name)]
    made = tuple(w for w in before_preposition(verbs) if w not in MAKING_VERBS)  # create_slide_from_template: a slide
    first = set(verbs[:2])
    return bool(MAKING_VERBS & first), bool(CREATING_VERBS & first), made


def is_destination(tool_name: str, param_name: str) -> bool:
    """Where a result goes or what a new thing is called, the caller's choice, never another tool's output:
    ``outputDir``; on a tool that writes or creates a file or folder, its lone place parameter
    (``write_file(path)``, ``create_directory(path)``); on a tool that creates something, the name of what it
    creates (``create_branch(branch_name)``)."""
    if is_output_location(param_name):
        return True
    making, creating, made = _making(tool_name)
    if not making or not made:
        return False
    words = [w.lower() for w in split_identifier(param_name)]
    if made[-1] in FILE_NOUNS and len(words) == 1 and words[0] in PLACE_WORDS:
        return True
    if creating:
        named = [w for w in words if w not in _NAMING]
        return named == list(made[-1:]) and len(words) > len(named)
    return False


def canonical_key(words: Iterable[str]) -> tuple[str, ...]:
    """Words with short forms spelled out and the head lemmatised: ('repo', 'paths') -> ('repository', 'path')."""
    return _canonical_key(tuple(words))


@lru_cache(maxsize=250_000)  # the rules ask for the same few thousand parameter names over and over
def _canonical_key(words: tuple[str, ...]) -> tuple[str, ...]:
    out = [ABBREVIATIONS.get(w, w) for w in words if w and not w.isdigit()]
    if out:
        out[-1] = lemma(out[-1])
    return tuple(out)


def session_parameter(tool: Tool) -> str | None:
    """The name of a tool's first parameter that carries a session (a token, a cookie...), else None: the one a
    login's edge goes through."""
    return next((q.name for q in tool.parameters if set(split_identifier(q.name)) & SESSION_WORDS), None)


def is_informative(key: tuple[str, ...]) -> bool:
    return any(w not in GENERIC_KEYS and len(w) > 2 for w in key)


def _lemmas(text: str) -> set[str]:
    return {lemma(w) for w in re.findall(r"[a-z]+", text.lower())}


@lru_cache(maxsize=250_000)
def profile(tool: Tool) -> Profile:
    """What the rules read of a tool (memoised: incremental sync re-infers over an unchanged catalog;
    the rules reassign only ``namespace``, and do so on every call)."""
    words = split_identifier(tool.name)
    at, action = name_action(words)
    obj = name_object_words(words, at) if words else []
    if not action:  # a noun name (git_branch, search): the description's lead verb says what it does
        action = description_action(tool.description or "")
    text = " ".join(
        [tool.name.replace("_", " "), tool.description, *(p.name.replace("_", " ") for p in tool.parameters)]
    )
    return Profile(tool, words, action, VERB_CAPABILITY.get(action, ""), obj, _lemmas(text))


# ``profile``'s cache hashes the tool and, on a hit, compares it field by field with the cached key: at
# 10k tools that is a second of every inference call. A catalog held in memory (a sync session, one build)
# passes the same Tool objects again, so they are first looked up by identity (the entry keeps the tool
# alive, so its id cannot be reused while the entry stands).
_BY_IDENTITY: dict[int, tuple[Tool, Profile]] = {}
_IDENTITY_ENTRIES = 250_000


def profile_of(tool: Tool) -> Profile:
    """``profile(tool)``, found by the object's identity first."""
    entry = _BY_IDENTITY.get(id(tool))
    if entry is not None and entry[0] is tool:
        return entry[1]
    found = profile(tool)
    if len(_BY_IDENTITY) >= _IDENTITY_ENTRIES:
        _BY_IDENTITY.clear()
    _BY_IDENTITY[id(tool)] = (tool, found)
    return found


RECORD_FIELDS = 4  # declared top-level outputs from which a tool returns a record rather than one value


@lru_cache(maxsize=250_000)
def output_key(path: str) -> tuple[str, ...]:
    """The key of a declared output field: its own name's (``places[].placeId`` -> place id), a bare identifier
    qualified by what holds it (``places[].id`` -> place id, ``owner.login`` -> owner login)."""
    segments = [s.replace("[]", "") for s in path.split(".")]
    leaf = split_identifier(segments[-1])
    if len(segments) > 1 and len(leaf) == 1 and leaf[0].lower() in IDENTIFIER_SUFFIXES | {"login", "sha", "slug"}:
        container = split_identifier(segments[-2])
        if container:
            return canonical_key([lemma(container[-1].lower()), *leaf])
    return canonical_key(leaf)


def offers(p: Profile) -> list[Offer]:
    """What a tool produces that another tool's parameter could take."""
    if p.offered is None:
        p.offered = _offers(p)
    return p.offered


def _offers(p: Profile) -> list[Offer]:
    contextual = not p.needs_input
    found: list[Offer] = []
    obj = [w for w in p.object_words if w not in CONTEXT_WORDS]
    if p.capability in ("read", "search", "create", "generate", "compute", "convert", "analyze") and obj:
        found.append(Offer(canonical_key(obj), f"name object of {p.tool.name}", contextual))
    # an output that hands back what the tool was given (get_stock_info(symbol) returns the symbol) feeds nothing
    given = {canonical_key(split_identifier(q.name)) for q in p.tool.parameters if q.required}
    # a tool that returns a whole record (get_order_details: symbol, amount, price, status...) is for its
    # object; a field of it named like some parameter is weaker evidence than a tool returning just that
    record = sum("." not in o.name for o in p.tool.outputs) >= RECORD_FIELDS
    about = {lemma(w) for w in obj}
    for output in p.tool.outputs:
        key = output_key(output.name)
        if key not in given:
            of_record = "." in output.name or (record and not about & set(key))
            found.append(Offer(key, f"output {output.name}", contextual, of_record=of_record))
    for key in described_returns(p.tool):
        found.append(Offer(key, f"{p.tool.name} returns {' '.join(key)} (its description)", contextual, True))
    unique = {o.key: o for o in reversed(found)}  # the first reading of a key wins
    return [o for o in found if is_informative(o.key) and unique[o.key] is o]


def parameter_match(offer: Offer, param_words: list[str]) -> tuple[float, str] | None:
    """(score, how) when the offer can fill a parameter with these words."""
    found = _parameter_match(offer, param_words)
    if found and offer.described:  # prose is looser than a name or a schema
        return round(found[0] * CONFIDENCE["described"], 2), f"{found[1]}, from its description"
    if found and offer.of_record:
        return round(found[0] * CONFIDENCE["record field"], 2), f"{found[1]}, a field of the record it returns"
    return found


def generalises(offer: Offer, param_words: list[str]) -> bool:
    """A specific offer for a parameter named by its head alone ('maven version' -> ``version``): sure
    only inside a server of tools written together."""
    full = canonical_key(param_words)
    return len(full) == 1 and len(offer.key) > 1 and offer.key[-1] == full[0] and not offer.described


def _parameter_match(offer: Offer, param_words: list[str]) -> tuple[float, str] | None:
    full = canonical_key(param_words)
    if not full:
        return None
    core = canonical_key(param_words[:-1]) if len(param_words) > 1 and param_words[-1] in IDENTIFIER_SUFFIXES else ()
    if offer.key == full:
        return CONFIDENCE["same name"], "same name"
    if core and offer.key == core:
        return CONFIDENCE["identifies"], f"{'_'.join(param_words)} identifies a {' '.join(core)}"
    form = canonical_key(param_words[:-1]) if len(param_words) > 1 and param_words[-1] in FORM_HEADS else ()
    if form and offer.key == form and is_informative(form):
        return CONFIDENCE["form"], f"{'_'.join(param_words)} is {' '.join(form)}"
    # Prose is loose ('returns the status'): a described return fills only a parameter of its own name.
    specific = len(full) > len(offer.key) and full[-len(offer.key) :] == offer.key and is_informative(offer.key)
    if specific and not offer.described:
        return CONFIDENCE["specific"], f"a specific {' '.join(offer.key)}"
    if generalises(offer, param_words):
        return CONFIDENCE["head"], f"a {' '.join(offer.key)} is a {full[0]}"
    last = ABBREVIATIONS.get(param_words[-1], param_words[-1])
    plural = lemma(last) != last  # 'days' is a number of days, not a day
    if not plural and full[-1] in DERIVABLE.get(offer.key[-1], ()):
        return CONFIDENCE["derived"], f"{full[-1]} derives from {offer.key[-1]}"
    return None


def is_near(p: Profile, q: Profile) -> bool:
    """Same server, or the same service namespace: where a description's words are meant."""
    return p.tool.server_id == q.tool.server_id or bool(p.namespace & q.namespace)
