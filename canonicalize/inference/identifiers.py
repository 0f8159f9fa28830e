"""The same-server identifier rule: an identifier a tool takes comes from the tool of its own server
that lists, finds, creates or starts the thing it identifies.

Real MCP servers rarely declare outputs, and their parameters are named after what they identify,
not after the producer: ``get_component_examples(componentName)`` <- ``search_components``,
``get_template_info(template_id)`` <- ``list_slide_templates``, ``get_card_by_id(id)`` <-
``search_cards`` (a bare ``id`` identifies the tool's own object), ``add_table(filename)`` <-
``create_document`` (a file parameter of a document server names the file its creator made).

The evidence is weak on its own (many tools take an ``id``), so it counts only inside one server:
a server's tools are written to be used together, while an ``id`` from another catalog's tool is
almost never the one meant. English and general API conventions only; no catalog's names.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from toolkg.canonicalize.inference.calibration import CONFIDENCE
from toolkg.canonicalize.inference.profiles import (
    IDENTIFIER_SUFFIXES,
    PARAMETER_DIRECT,
    PARAMETER_INDIRECT,
    TOOL_DIRECT,
    Profile,
    canonical_key,
    is_destination,
    is_informative,
    session_parameter,
)
from toolkg.canonicalize.inference.returns import described_returns
from toolkg.models import InferredEdge
from toolkg.text.words import lemma, split_identifier

# What names one thing among many: an id, a key, a slug, a path or URI, a position in a list.
REFERENCE_SUFFIXES = IDENTIFIER_SUFFIXES | frozenset({"slug", "uri", "url", "path", "index", "idx", "symbol"})
# Whole parameter names that are a reference to a file the server works on.
FILE_REFERENCES = frozenset({"filename", "filepath", "file", "path", "docname"})
# Things a server creates and later addresses by file name or path.
FILE_OBJECTS = frozenset({"file", "document", "doc", "presentation", "workbook", "spreadsheet", "notebook"})
# How a tool makes the things others refer to: it lists, finds, creates, starts or converts into them.
PRODUCING = {"read": 2, "search": 3, "create": 1, "execute": 1, "convert": 1}
# Verbs that open what a server's other tools then act on (a page, a session, a connection).
OPENERS = frozenset({"navigate", "goto", "open", "launch", "connect", "start"})
OPENER_CAPABILITIES = frozenset({"interact", "execute", "read", "manage"})
# A server of more tools than this is a catalog of many services (one file of a whole platform), not
# a set of tools written to be used together: the rule stays out of it.
MAX_SERVER_TOOLS = 64
# Words too generic to name a thing across a catalog that do name one inside a server: a
# ``requestId`` identifies the request its server's ``request_planning`` registered.
SERVER_OBJECTS = frozenset(
    {"request", "item", "result", "response", "operation", "action", "function", "method", "order", "page"}
)


def _names_thing(key: tuple[str, ...]) -> bool:
    return is_informative(key) or (bool(key) and key[-1] in SERVER_OBJECTS)


def _heads(p: Profile) -> set[str]:
    """The noun a tool's own object is called by, its head: ``list_slide_templates`` -> template;
    a converter's is what it converts into: ``docx_to_html`` -> html."""
    words = p.words
    if "to" in words[1:-1]:  # A_to_B: it makes B out of A
        after = [w for w in words[len(words) - words[::-1].index("to") :] if is_informative((w,))]
        return {lemma(after[-1])} if after else set()
    server = set(split_identifier(p.tool.server_id))
    key = canonical_key(w for w in p.object_words if w not in server)  # a server prefix says nothing
    if key and _names_thing(key[-1:]):
        return {key[-1]}
    # a noun name or a verb alone (search, git_init): what the description says it returns or makes
    described = {k[-1] for k in described_returns(p.tool) if _names_thing(k[-1:])}
    if described:
        return described
    key = canonical_key(p.object_words)
    return {key[-1]} if key and _names_thing(key[-1:]) else set()


def _converts(p: Profile) -> bool:
    """Named A_to_B (docx_to_html): it writes B, whatever verb its name lacks."""
    return "to" in p.words[1:-1]


def _source(p: Profile) -> set[str]:
    """What a tool works on: a converter's input format (``html_to_markdown`` -> html), else its object."""
    words = p.words
    if "to" in words[1:-1]:
        return {lemma(w) for w in words[: words.index("to")] if is_informative((w,))}
    return _heads(p)


def _lists(p: Profile) -> bool:
    """Returns many of its object (search_cards, list_files, getStories), not one."""
    last = p.object_words[-1] if p.object_words else ""
    return p.capability == "search" or p.action == "list" or (bool(last) and lemma(last) != last)


def _referenced(param_name: str, consumer: Profile) -> tuple[set[str], float, bool] | None:
    """What a parameter identifies, how sure that reading is, and whether it names a file; None when
    the parameter is not a reference."""
    words = split_identifier(param_name)
    if not words:
        return None
    joined = "".join(words)
    if joined in FILE_REFERENCES or words[-1] in {"filename", "filepath", "path", "paths"}:
        named = {canonical_key([w])[0] for w in words[:-1] if w != "file" and is_informative((w,))}
        return named or _source(consumer), CONFIDENCE["identifier file"], True
    if words[-1] not in REFERENCE_SUFFIXES:
        return None
    key = canonical_key(words[:-1])
    if key and _names_thing(key):
        return {key[-1]}, CONFIDENCE["identifier named"], False
    if key:
        return None  # a 'typeId' or 'dataId' names nothing a tool would list
    own = _heads(consumer)  # a bare 'id' identifies the tool's own object: get_card_by_id(id) -> card
    return (own, CONFIDENCE["identifier of own object"], False) if own else None


def identifier_edges(by_server: Mapping[str, list[Profile]], consumers: Iterable[Profile]) -> list[InferredEdge]:
    """``by_server``: server id -> its tools in catalog order (``CatalogIndex.by_server``)."""
    edges: list[InferredEdge] = []
    for members, asked in _servers_asked(by_server, consumers):
        if len(members) > MAX_SERVER_TOOLS:
            continue
        producers = [(p, _heads(p)) for p in members if p.capability in PRODUCING or _converts(p)]
        producers = [(p, heads) for p, heads in producers if heads]
        if not producers:
            continue
        for consumer in asked:
            for param in consumer.tool.parameters:
                if is_destination(consumer.tool.name, param.name):
                    continue
                edges += _best_edges(consumer, param, producers)
    return edges


def _servers_asked(
    by_server: Mapping[str, list[Profile]], consumers: Iterable[Profile]
) -> list[tuple[list[Profile], list[Profile]]]:
    """(a server's tools, those of them asked for) for each server of the consumers asked for, in the
    order the consumers come."""
    asked: dict[str, list[Profile]] = defaultdict(list)
    for consumer in consumers:
        asked[consumer.tool.server_id].append(consumer)
    return [(by_server.get(server, []), wanted) for server, wanted in asked.items()]


def _best_edges(consumer: Profile, param, producers: list[tuple[Profile, set[str]]]) -> list[InferredEdge]:
    """The best producer of each kind: the tool that makes the thing and the one that lists or finds it
    (an order id comes from placing the order or from listing orders)."""
    found = _referenced(param.name, consumer)
    if found is None:
        return []
    wanted, confidence, is_file = found
    candidates = []
    own, consumer_lists = _heads(consumer), _lists(consumer)  # read once, not per producer
    for producer, heads in producers:
        sibling = producer.capability == consumer.capability and heads == own
        if producer is consumer or (sibling and not (_lists(producer) and not consumer_lists)):
            continue  # a sibling doing the same to the same thing, not its source
        if is_file:  # a file its creator made, or one a converter wrote in the format this tool reads
            made = producer.capability == "create" and heads & (FILE_OBJECTS | wanted)  # git_init -> repo_path
            if not (made or ((producer.capability == "convert" or _converts(producer)) and heads & wanted)):
                continue
        elif not heads & wanted:
            continue
        rank = PRODUCING.get(producer.capability, 1)
        candidates.append((-rank, len(producer.tool.parameters), producer.id, producer))
    best: dict[bool, tuple] = {}
    for c in candidates:
        makes = c[3].capability == "create"
        best[makes] = min(best.get(makes, c), c)
    what = "a file it creates" if is_file else " ".join(sorted(wanted))
    return [_edge(consumer, param, producer, confidence, what) for *_, producer in best.values()]


def _edge(consumer: Profile, param, producer: Profile, confidence: float, what: str) -> InferredEdge:
    return InferredEdge(
        consumer=consumer.id,
        producer=producer.id,
        kind=PARAMETER_DIRECT if param.required else PARAMETER_INDIRECT,
        parameter=param.name,
        confidence=confidence,
        rule="same-server-identifier",
        evidence=f"{param.name} identifies {what}; {producer.tool.name} of the same server "
        f"{'creates' if producer.capability == 'create' else 'lists or finds'} it",
    )


def opener_edges(by_server: Mapping[str, list[Profile]], consumers: Iterable[Profile]) -> list[InferredEdge]:
    """A server whose one opener (navigate, open, connect, launch, start) makes the page or session its
    interaction tools (click, fill, hover, screenshot...) act on: the opener runs first."""
    edges = []
    for members, asked in _servers_asked(by_server, consumers):
        if len(members) > MAX_SERVER_TOOLS:
            continue
        openers = [
            p for p in members if p.action in OPENERS and p.capability in ("interact", "execute", "read", "manage")
        ]
        if len(openers) != 1:  # none, or several with nothing to choose between them
            continue
        (opener,) = openers
        for consumer in asked:
            if consumer is opener or consumer.capability != "interact":
                continue
            edges.append(
                InferredEdge(
                    consumer=consumer.id,
                    producer=opener.id,
                    kind=TOOL_DIRECT,
                    parameter=None,
                    confidence=CONFIDENCE["session opener"],
                    rule="session-opener",
                    evidence=f"{consumer.tool.name} acts on what {opener.tool.name} opens ({opener.action})",
                )
            )
    return edges


LOGINS = frozenset("login signin sign authenticate authorize".split())  # authenticate's actions that open a session
# what a tool does to the account it acts for: a write of any kind, the state it leaves for the next call
ACCOUNT_WRITES = frozenset("create update delete send schedule purchase".split())


def login_edges(by_server: Mapping[str, list[Profile]], consumers: Iterable[Profile]) -> list[InferredEdge]:
    """A server whose one login opens the session its writes act for: the login precedes each tool of the server
    that creates, changes, deletes, sends, books or buys (and its logout). The login a tool's name carries the
    service of is namespace_auth_edges' (catalog_rules.py); this one reads no name token, only the server."""
    edges = []
    for members, asked in _servers_asked(by_server, consumers):
        if len(members) > MAX_SERVER_TOOLS:
            continue
        logins = [p for p in members if p.capability == "authenticate" and p.action in LOGINS]
        if len(logins) != 1:  # none, or several with nothing to choose between them
            continue
        (login,) = logins
        for consumer in asked:
            ends = consumer.action == "logout"
            if consumer is login or not (consumer.capability in ACCOUNT_WRITES or ends):
                continue
            session = session_parameter(consumer.tool)
            edges.append(
                InferredEdge(
                    consumer=consumer.id,
                    producer=login.id,
                    kind=PARAMETER_DIRECT if session else TOOL_DIRECT,
                    parameter=session,
                    confidence=CONFIDENCE["server login"],
                    rule="server-login",
                    evidence=f"{login.tool.name} is its server's one login; {consumer.tool.name} "
                    f"{'ends the session' if ends else 'writes for the account'} ({consumer.action})",
                )
            )
    return edges
