"""Dependency inference: producer -> consumer edges a planner needs when manifests declare none.

Offline rules over names, parameters, outputs and descriptions (no benchmark's tool, server
or domain words: only English and general tool-documentation conventions):

1. **Output -> parameter.** What a producer offers (its outputs, the object of its name —
   ``get_country_code`` offers *country code* — a validator's object, an authenticator's
   session) is matched to other tools' parameters by canonical key: exact key, key minus an
   identifier suffix (``email_address`` -> *email*), a more specific parameter of the same head
   (*date* -> ``start_date``), or a value derivable from it (*date* -> ``year``). The parameter
   comes from the producer directly when it is required and the producer needs input of its
   own; a context getter with no required input (current date, location, language) feeds it
   only when the user's input is relative: ``parameterIndirectlyDependsOn``.
2. **Namespace authentication.** A tool that logs into something (capability *authenticate*)
   is a prerequisite of the other tools that carry the same rare name token (``acme_login`` ->
   ``acme_add_to_cart``), through their session/token parameter when they have one.
3. **Resource preconditions.** A status check with no required input (``get_bluetooth_status``)
   is a prerequisite of tools whose text mentions its resource.

Sparsification (FED-GRAPH-MCP's lesson): generic names (id, name, query, text...) never link
on their own; each consumer parameter keeps its best producer(s); a weak rule whose fan-out
exceeds a cap keeps only its strongest edges.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from spacy.lang.en.stop_words import STOP_WORDS

from toolkg.extractors.lexicon import GENERIC_NOUNS, GENERIC_PARAMETERS, VERB_CAPABILITY
from toolkg.extractors.offline import name_action, name_object_words
from toolkg.extractors.text import lemma, split_identifier
from toolkg.models import Tool

# Words that make a parameter an identifier *of* something: 'email_address' is an email.
IDENTIFIER_SUFFIXES = frozenset("id ids uuid code codes key name names number address token handle ref".split())
# Adjectives that make a producer's object contextual ('current location' is the location).
CONTEXT_WORDS = frozenset("current system user device my local default active present today latest".split())
# Values derivable from another (a date gives its year): general knowledge of common types.
DERIVABLE = {
    "date": {"year", "month", "day", "weekday", "week"},
    "time": {"hour", "minute"},
    "location": {"latitude", "longitude", "lat", "lon", "lng", "coordinate", "region", "place"},
}
# What authenticating produces, whatever the service.
SESSION_WORDS = frozenset({"session", "token", "auth", "credential", "cookie"})
GENERIC_KEYS = GENERIC_NOUNS | GENERIC_PARAMETERS | IDENTIFIER_SUFFIXES | CONTEXT_WORDS
STATUS_WORDS = frozenset({"status", "state", "availability", "enabled", "mode"})
# A status check whose text says it is about one of these is a connectivity check.
CONNECTIVITY_WORDS = frozenset({"connectivity", "internet", "network", "online", "connection"})
# Capabilities that work on what the tool is given, with no outside service to reach.
LOCAL_CAPABILITIES = frozenset({"compute", "convert", "analyze"})

PARAMETER_DIRECT = "parameterDirectlyDependsOn"
PARAMETER_INDIRECT = "parameterIndirectlyDependsOn"
TOOL_DIRECT = "toolDirectlyDependsOn"
TOOL_INDIRECT = "toolIndirectlyDependsOn"


@dataclass(frozen=True)
class InferredEdge:
    consumer: str  # tool id
    producer: str  # tool id
    kind: str  # one of the four ToolLinkOS sub-properties of tk:dependsOn
    parameter: str | None
    confidence: float
    rule: str
    evidence: str
    basis: str = "inferred"  # "llm" once a language model confirmed it


@dataclass
class InferenceOptions:
    max_producers_per_parameter: int = 1
    weak_fanout_cap: int = 40  # a weak rule reaching more consumers keeps only its strongest edges
    rare_token_share: float = 0.05  # a namespace token must name at most this share of the catalog
    min_confidence: float = 0.5


@dataclass
class _Offer:
    key: tuple[str, ...]  # canonical words
    how: str
    contextual: bool  # a context getter: no required input


@dataclass
class _Profile:
    tool: Tool
    words: list[str]
    action: str
    capability: str
    object_words: list[str]
    text_lemmas: set[str] = field(default_factory=set)
    namespace: set[str] = field(default_factory=set)  # rare name tokens: the service a tool belongs to

    @property
    def needs_input(self) -> bool:
        return any(q.required for q in self.tool.parameters)

    @property
    def is_status_check(self) -> bool:
        """Reads the status of something and needs no input: get_bluetooth_status."""
        return self.capability == "read" and not self.needs_input and bool(STATUS_WORDS & set(self.object_words))


def canonical_key(words: Iterable[str]) -> tuple[str, ...]:
    out = [w for w in words if w and not w.isdigit()]
    if out:
        out[-1] = lemma(out[-1])
    return tuple(out)


def is_informative(key: tuple[str, ...]) -> bool:
    return any(w not in GENERIC_KEYS and len(w) > 2 for w in key)


def _lemmas(text: str) -> set[str]:
    return {lemma(w) for w in re.findall(r"[a-z]+", text.lower())}


def profile(tool: Tool) -> _Profile:
    words = split_identifier(tool.name)
    at, action = name_action(words)
    obj = name_object_words(words, at) if words else []
    text = " ".join(
        [tool.name.replace("_", " "), tool.description, *(p.name.replace("_", " ") for p in tool.parameters)]
    )
    return _Profile(tool, words, action, VERB_CAPABILITY.get(action, ""), obj, _lemmas(text))


def offers(p: _Profile) -> list[_Offer]:
    """What a tool produces that another tool's parameter could take."""
    contextual = not p.needs_input
    found: list[_Offer] = []
    obj = [w for w in p.object_words if w not in CONTEXT_WORDS]
    if p.capability in ("read", "search", "create", "generate", "compute", "convert", "analyze") and obj:
        found.append(_Offer(canonical_key(obj), f"name object of {p.tool.name}", contextual))
    for output in p.tool.outputs:
        found.append(_Offer(canonical_key(split_identifier(output.name)), f"output {output.name}", contextual))
    return [o for o in found if is_informative(o.key)]


def parameter_match(offer: _Offer, param_words: list[str]) -> tuple[float, str] | None:
    """(score, how) when the offer can fill a parameter with these words."""
    full = canonical_key(param_words)
    if not full:
        return None
    core = canonical_key(param_words[:-1]) if len(param_words) > 1 and param_words[-1] in IDENTIFIER_SUFFIXES else ()
    if offer.key == full:
        return 1.0, "same name"
    if core and offer.key == core:
        return 0.9, f"{'_'.join(param_words)} identifies a {' '.join(core)}"
    if len(full) > len(offer.key) and full[-len(offer.key) :] == offer.key and is_informative(offer.key):
        return 0.75, f"a specific {' '.join(offer.key)}"
    if len(offer.key) == 1 and full[-1] in DERIVABLE.get(offer.key[0], ()):
        return 0.7, f"{full[-1]} derives from {offer.key[0]}"
    return None


def infer_dependencies(
    tools: Sequence[Tool], options: InferenceOptions | None = None, declared: Iterable[tuple[str, str]] = ()
) -> list[InferredEdge]:
    """Inferred edges over the whole catalog, never duplicating a ``declared`` (consumer, producer) pair."""
    options = options or InferenceOptions()
    profiles = [profile(t) for t in tools]
    _assign_namespaces(profiles, options)
    edges: list[InferredEdge] = []
    edges += _parameter_edges(profiles, options)
    edges += _namespace_auth_edges(profiles)
    edges += _precondition_edges(profiles)
    edges += _connectivity_edges(profiles)
    hubs = {p.tool.id for p in profiles if not p.needs_input}
    return _sparsify(edges, options, set(declared), hubs)


def _parameter_edges(profiles: list[_Profile], options: InferenceOptions) -> list[InferredEdge]:
    # Block candidates by the last word of each offer: a parameter only meets offers sharing its
    # head (or a head it derives from), never the whole catalog.
    by_head: dict[str, list[tuple[_Profile, _Offer]]] = defaultdict(list)
    for p in profiles:
        for offer in offers(p):
            by_head[offer.key[-1]].append((p, offer))
    derivers = {child: parent for parent, children in DERIVABLE.items() for child in children}
    edges = []
    for consumer in profiles:
        for param in consumer.tool.parameters:
            words = split_identifier(param.name)
            if not words or not is_informative(canonical_key(words)):
                continue
            heads = {lemma(words[-1]), derivers.get(lemma(words[-1]), "")}
            if len(words) > 1 and words[-1] in IDENTIFIER_SUFFIXES:
                heads.add(lemma(words[-2]))
            scored = []
            for head in heads - {""}:
                for producer, offer in by_head.get(head, ()):
                    if producer is consumer or (producer.namespace and not producer.namespace & consumer.namespace):
                        continue  # a service's own tools feed that service only
                    match = parameter_match(offer, words)
                    if match:
                        scored.append((match[0], producer, offer, match[1]))
            scored.sort(key=lambda s: (-s[0], len(s[1].tool.parameters), s[1].tool.id))
            for score, producer, offer, how in scored[: options.max_producers_per_parameter]:
                direct = param.required and not offer.contextual
                edges.append(
                    InferredEdge(
                        consumer=consumer.tool.id,
                        producer=producer.tool.id,
                        kind=PARAMETER_DIRECT if direct else PARAMETER_INDIRECT,
                        parameter=param.name,
                        confidence=round(score, 2),
                        rule="output-to-parameter",
                        evidence=f"{param.name} <- {offer.how} ({how})",
                    )
                )
    return edges


def _assign_namespaces(profiles: list[_Profile], options: InferenceOptions) -> None:
    """A tool's namespace: the service it belongs to, known from that service's login tool.

    The rare, non-generic, non-verb tokens of an authenticating tool's name (``acme_user_login`` ->
    acme) name a service; every tool whose name carries them belongs to it. Rare alone is not
    enough: 'date' is rare in tool names and names no service."""
    token_tools: dict[str, int] = Counter(w for p in profiles for w in set(p.words))
    limit = max(8, int(options.rare_token_share * len(profiles)))  # small catalogs: a service may own 8 tools
    services: set[str] = set()
    for p in profiles:
        if p.capability != "authenticate":
            continue
        services |= {
            w
            for w in p.words
            if w not in VERB_CAPABILITY
            and lemma(w) not in VERB_CAPABILITY
            and w not in GENERIC_KEYS
            and w not in STOP_WORDS
            and w not in ("account", "app", "user")
            and len(w) > 1
            and 1 < token_tools[w] <= limit
        }
    for p in profiles:
        p.namespace = services & set(p.words)


def _namespace_auth_edges(profiles: list[_Profile]) -> list[InferredEdge]:
    members_of: dict[str, set[str]] = defaultdict(set)
    for p in profiles:
        for w in p.namespace:
            members_of[w].add(p.tool.id)
    edges = []
    for auth in (p for p in profiles if p.capability == "authenticate"):
        brand = sorted(auth.namespace)
        if not brand:
            continue
        members = set.intersection(*(members_of[w] for w in brand)) - {auth.tool.id}
        for consumer in (p for p in profiles if p.tool.id in members and p.capability != "authenticate"):
            session = next(
                (q.name for q in consumer.tool.parameters if set(split_identifier(q.name)) & SESSION_WORDS), None
            )
            edges.append(
                InferredEdge(
                    consumer=consumer.tool.id,
                    producer=auth.tool.id,
                    kind=PARAMETER_DIRECT if session else TOOL_DIRECT,
                    parameter=session,
                    confidence=0.85 if session else 0.7,
                    rule="namespace-authentication",
                    evidence=f"{auth.tool.name} authenticates '{' '.join(brand)}', which {consumer.tool.name} names",
                )
            )
    return edges


def _precondition(consumer: _Profile, check: _Profile, confidence: float, rule: str, evidence: str) -> InferredEdge:
    return InferredEdge(
        consumer=consumer.tool.id,
        producer=check.tool.id,
        kind=TOOL_DIRECT,
        parameter=None,
        confidence=confidence,
        rule=rule,
        evidence=evidence,
    )


def _precondition_edges(profiles: list[_Profile]) -> list[InferredEdge]:
    """A status check precedes the tools whose text mentions the resource it checks."""
    edges = []
    for check in (p for p in profiles if p.is_status_check):
        resource = [w for w in check.object_words if w not in STATUS_WORDS and w not in GENERIC_KEYS]
        if not resource:
            continue
        needed = {lemma(w) for w in resource}
        for consumer in profiles:
            status_tool = STATUS_WORDS & set(consumer.object_words)  # a status tool is no consumer
            if consumer is not check and needed <= consumer.text_lemmas and not status_tool:
                evidence = f"{consumer.tool.name} mentions {' '.join(resource)}, which {check.tool.name} checks"
                edges.append(_precondition(consumer, check, 0.7, "resource-precondition", evidence))
    return edges


def _connectivity_edges(profiles: list[_Profile]) -> list[InferredEdge]:
    """A connectivity check (a status check whose text is about connectivity) is a precondition of
    every tool that reaches an outside service: one that takes input and is not a local
    computation. Weak evidence (one rule for a whole class), hence a low confidence."""
    checks = [p for p in profiles if p.is_status_check and CONNECTIVITY_WORDS & p.text_lemmas]
    if len(checks) != 1:  # none, or several with nothing to choose between them
        return []
    (check,) = checks
    return [
        _precondition(
            consumer,
            check,
            0.55,
            "connectivity-precondition",
            f"{consumer.tool.name} reaches an outside service; {check.tool.name} checks connectivity",
        )
        for consumer in profiles
        # a context getter or device setting (no input) and a local computation work offline
        if consumer is not check and consumer.needs_input and consumer.capability not in LOCAL_CAPABILITIES
    ]


def _sparsify(
    edges: list[InferredEdge], options: InferenceOptions, declared: set[tuple[str, str]], hubs: set[str]
) -> list[InferredEdge]:
    """Drop weak edges of promiscuous parameter matches; keep one edge per (consumer, producer, parameter).

    Producers that need no input (context getters, status checks) are hubs by nature and exempt from
    the fan-out cap; their edges are bounded by the rules themselves (one producer per parameter,
    one connectivity check)."""
    fanout = Counter((e.producer, e.rule) for e in edges)
    kept: dict[tuple[str, str, str | None], InferredEdge] = {}
    for e in edges:
        if e.confidence < options.min_confidence or (e.consumer, e.producer) in declared:
            continue
        if fanout[e.producer, e.rule] > options.weak_fanout_cap and e.confidence < 0.9 and e.producer not in hubs:
            continue  # a weak rule that reaches everything says nothing
        key = (e.consumer, e.producer, e.parameter)
        if key not in kept or kept[key].confidence < e.confidence:
            kept[key] = e
    return sorted(kept.values(), key=lambda e: (e.consumer, e.producer, e.parameter or ""))
