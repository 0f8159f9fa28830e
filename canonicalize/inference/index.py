"""The catalog as dependency inference reads it, indexed: ``CatalogIndex``.

Every rule reads the catalog through lookups, never by scanning it: a parameter reads the producers
filed under its candidate keys, a mention the tools of the name it says, a setter the getters of its
state. A build files every tool once; incremental sync (incremental.py) keeps one index and files or
unfiles the tools a change touches (``add`` / ``discard``), so the lookups a change needs cost what they
reach, not the catalog.

What the index holds: each tool's profile and catalog; the service namespaces (a login tool's rare name
tokens, counted over the catalog); the producers' offers by key and by (server, key), in tie-break order,
with their classes (``candidates.offer_classes``: a kept index keeps each class's members, so a change
refiles an offer, not a bucket); the tools by server, by name and
by namespace word; the writers of each file format; and, per catalog, the logins by namespace word, the
status checks by a word of their resource, the connectivity checks and the getters and setters by state.

Order: where a rule breaks ties by catalog order, a built index orders tools by their place in the
sequence it was given, a kept one by id (the store reads its tools sorted by id).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from toolkg.canonicalize.inference.candidates import Entry, class_of, offer_classes, order
from toolkg.canonicalize.inference.files import writer_order, writes
from toolkg.canonicalize.inference.profiles import GENERIC_KEYS, Offer, Profile, is_informative, offers, profile_of
from toolkg.canonicalize.inference.roles import is_connectivity_check, is_getter, is_setter, needed, state_key
from toolkg.config import InferenceOptions
from toolkg.models import Tool
from toolkg.text.lexicon import STOP_WORDS, VERB_CAPABILITY
from toolkg.text.words import lemma

# Profiles are shared (memoised by tool), and their namespace is set by the last index that assigned
# namespaces: a kept index re-assigns them when another has since (``CatalogIndex.own_namespaces``).
_NAMESPACE_OWNER: list[object] = [None]


def service_words(p: Profile) -> set[str]:
    """The tokens of a login tool's name that may name its service (if rare in the catalog)."""
    if p.capability != "authenticate":
        return set()
    return {
        w
        for w in p.words
        if w not in VERB_CAPABILITY
        and lemma(w) not in VERB_CAPABILITY
        and w not in GENERIC_KEYS
        and w not in STOP_WORDS
        and w not in ("account", "app", "user")
        and len(w) > 1
    }


def filings(p: Profile) -> list[tuple[tuple[str, ...], Entry]]:
    """The buckets a producer's offers are filed under, and its entry in each: an offer under its key,
    and under its head word too (a 'maven version' can fill a 'version')."""
    out = []
    for n, offer in enumerate(offers(p)):
        keys = [offer.key]
        if len(offer.key) > 1 and is_informative(offer.key[-1:]):
            keys.append(offer.key[-1:])
        for key in keys:
            out.append((key, ((*order(p, offer, key), n), p, offer)))
    return out


class CatalogIndex:
    """A catalog's tools filed for the rules' lookups (the module doc). ``kept``: ordered by id and kept
    current by ``add`` / ``discard`` (incremental sync), with the namespace counts that needs."""

    def __init__(
        self,
        tools: Iterable[Tool],
        options: InferenceOptions | None = None,
        catalogs: Mapping[str, str] | None = None,
        *,
        kept: bool = False,
    ) -> None:
        self.options = options or InferenceOptions()
        self.catalogs = catalogs or {}
        self.kept = kept
        self.profiles: dict[str, Profile] = {}
        self._place: dict[int, int] = {}  # a built index: id(profile) -> its place in the catalog given
        self.groups: dict[str, str] = {}  # tool id -> the catalog it was filed in
        self.server_sizes: Counter[str] = Counter()
        self.by_server: dict[str, list[Profile]] = defaultdict(list)
        self.by_name: dict[str, list[Profile]] = defaultdict(list)
        self.by_namespace: dict[str, list[Profile]] = defaultdict(list)
        self.by_key: dict[tuple[str, ...], list[Entry]] = defaultdict(list)
        self.by_server_key: dict[tuple[str, tuple[str, ...]], list[Entry]] = defaultdict(list)
        self._classes: dict[tuple[str, ...], list] = {}  # key -> its classes, as read last
        # a kept index: key -> offer class -> its members (place, producer, offer) in bucket order
        self._members: dict[tuple[str, ...], dict[tuple, list]] = defaultdict(dict)
        self.writers: dict[str, list[Profile]] = defaultdict(list)
        self.logins: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.checks: dict[tuple[str, str], list[Profile]] = defaultdict(list)
        self.connectivity: dict[str, list[Profile]] = defaultdict(list)
        self.getters: dict[tuple[str, tuple[str, ...]], list[Profile]] = defaultdict(list)
        self.setters: dict[tuple[str, tuple[str, ...]], list[Profile]] = defaultdict(list)
        self.members: dict[str, set[str]] = defaultdict(set)  # catalog -> tool ids (kept only)
        # namespaces: how many tools carry each name token, which tools (kept only), and the tokens
        # login tools offer as service names
        self.token_tools: Counter[str] = Counter()
        self.word_tools: dict[str, set[str]] = defaultdict(set)
        self.login_words: Counter[str] = Counter()
        self.services: set[str] = set()
        profiles = [profile_of(t) for t in (sorted(tools, key=lambda t: t.id) if kept else tools)]
        if not kept:
            self._place = {id(p): n for n, p in enumerate(profiles)}
        for p in profiles:
            self.profiles[p.id] = p
            self._count(p, 1)
        self._assign_namespaces(profiles)
        for p in profiles:
            self._file(p, sort=False)
        for bucket in (*self.by_key.values(), *self.by_server_key.values()):
            bucket.sort(key=_place_of)
        if kept:
            for key, bucket in self.by_key.items():
                self._members[key] = {class_of(rep): members for rep, members in offer_classes(bucket)}
        for members in self.writers.values():
            members.sort(key=writer_order)

    # --- reading ------------------------------------------------------------------------------

    def rank(self, p: Profile) -> Any:
        """A tool's place in catalog order."""
        return p.id if self.kept else self._place[id(p)]

    def ordered(self, ids: Iterable[str] | None = None) -> list[Profile]:
        """The profiles (all, or of ``ids`` still in the index) in catalog order."""
        chosen = self.profiles.values() if ids is None else [self.profiles[i] for i in ids if i in self.profiles]
        return sorted(chosen, key=self.rank)

    def group(self, p: Profile) -> str:
        """The catalog a tool is in (one when no catalogs are given)."""
        return self.catalogs.get(p.tool.server_id, "")

    def classes(self, key: tuple[str, ...]) -> list:
        """The offers filed under ``key`` in classes (``offer_classes``), made when first read (a kept index:
        from the classes' members, ordered as a bucket's read would meet them)."""
        found = self._classes.get(key)
        if found is None:
            if self.kept:
                members = sorted(self._members.get(key, {}).values(), key=_first_place)
                found = [(m[0][2], m) for m in members]
            else:
                found = offer_classes(self.by_key.get(key, ()))
            self._classes[key] = found
        return found

    def nearby(self, consumer: Profile) -> list[Profile]:
        """The tools near a consumer (same server or service namespace, see ``is_near``), in catalog order."""
        found = {id(p): p for p in self.by_server.get(consumer.tool.server_id, ())}
        for w in consumer.namespace:
            found.update((id(p), p) for p in self.by_namespace.get(w, ()))
        found.pop(id(consumer), None)
        return sorted(found.values(), key=self.rank)

    # --- namespaces ---------------------------------------------------------------------------

    def _limit(self) -> int:
        return max(8, int(self.options.rare_token_share * len(self.profiles)))  # small catalogs: 8 tools

    def _services(self) -> set[str]:
        """A tool's namespace: the service it belongs to, known from that service's login tool.

        The rare, non-generic, non-verb tokens of an authenticating tool's name (``acme_user_login`` ->
        acme) name a service; every tool whose name carries them belongs to it. Rare alone is not
        enough: 'date' is rare in tool names and names no service."""
        limit = self._limit()
        return {w for w in self.login_words if 1 < self.token_tools[w] <= limit}

    def _assign_namespaces(self, profiles: Iterable[Profile]) -> None:
        self.services = self._services()
        for p in profiles:
            p.namespace = self.services & set(p.words)
        _NAMESPACE_OWNER[0] = self

    def own_namespaces(self) -> None:
        """Profiles are shared: when another index assigned namespaces since, put this catalog's back."""
        if _NAMESPACE_OWNER[0] is not self:
            self._assign_namespaces(self.profiles.values())

    def _count(self, p: Profile, sign: int) -> None:
        self.server_sizes[p.tool.server_id] += sign
        for w in set(p.words):
            self.token_tools[w] += sign
            if self.kept:
                (self.word_tools[w].add if sign > 0 else self.word_tools[w].discard)(p.id)
        for w in service_words(p):
            self.login_words[w] += sign
            if not self.login_words[w]:
                del self.login_words[w]

    # --- filing (kept) --------------------------------------------------------------------------

    def discard(self, tool_id: str) -> Profile:
        """Unfile a tool (its namespace as it was filed); returns its profile."""
        p = self.profiles[tool_id]
        self._unfile(p)
        self._count(p, -1)
        del self.profiles[tool_id]
        return p

    def add(self, tool: Tool) -> Profile:
        """Count a tool in (its namespace is assigned by ``settle_namespaces``, which files it)."""
        p = profile_of(tool)
        self.profiles[tool.id] = p
        self._count(p, 1)
        return p

    def settle_namespaces(self, added: Iterable[Profile]) -> dict[str, frozenset[str]]:
        """After ``discard`` and ``add``: the services as the counts now say, each added tool given its
        namespace and filed, and every other tool whose namespace changed refiled. Returns those others
        (a token became, or stopped being, a service's) with the namespace each had."""
        services = self._services()
        flipped = services ^ self.services
        self.services = services
        added = list(added)
        fresh = {p.id for p in added}
        moved = {i: frozenset(self.profiles[i].namespace) for w in flipped for i in self.word_tools.get(w, ())}
        for i in fresh:
            moved.pop(i, None)
        for i in moved:
            p = self.profiles[i]
            self._file_namespace(p, self.groups[i], -1)
            p.namespace = services & set(p.words)
            self._file_namespace(p, self.groups[i], 1)
        for p in added:
            p.namespace = services & set(p.words)
            self._file(p, sort=True)
        return moved

    def regroup(self, tool_id: str) -> None:
        """File a tool again under the catalog its server is in now."""
        p = self.profiles[tool_id]
        self._unfile(p)
        self._file(p, sort=True)

    def _file(self, p: Profile, sort: bool) -> None:
        """File a tool everywhere. ``sort``: insert in order (a kept index); else append (a built one's
        lists are filled in catalog order, and its buckets and writers sorted once after)."""
        i, server, group = p.id, p.tool.server_id, self.group(p)
        self.groups[i] = group
        put = _insort if sort else _append
        put(self.by_server[server], p, _id)
        put(self.by_name[p.tool.name.lower()], p, _id)
        for key, entry in filings(p):
            put(self.by_key[key], entry, _place_of)
            put(self.by_server_key[server, key], entry, _place_of)
            if sort:
                members = self._members[key].setdefault(class_of(entry[2]), [])
                insort(members, (entry[0][:3], p, entry[2]), key=_place_of)
            self._classes.pop(key, None)
        for fmt in writes(p):
            put(self.writers[fmt], p, writer_order)
        self._file_namespace(p, group, 1, sort)
        if self.kept:
            self.members[group].add(i)
        resource = needed(p)
        if resource:
            put(self.checks[group, min(resource)], p, _id)
        if is_connectivity_check(p):
            put(self.connectivity[group], p, _id)
        if is_getter(p):
            put(self.getters[group, state_key(p)], p, _id)
        if is_setter(p):
            put(self.setters[group, state_key(p)], p, _id)

    def _unfile(self, p: Profile) -> None:
        i, server, group = p.id, p.tool.server_id, self.groups.pop(p.id)
        _remove(self.by_server, server, p, _id)
        _remove(self.by_name, p.tool.name.lower(), p, _id)
        for key, entry in filings(p):
            _remove(self.by_key, key, entry, _place_of)
            _remove(self.by_server_key, (server, key), entry, _place_of)
            _remove(self._members[key], class_of(entry[2]), (entry[0][:3], p, entry[2]), _place_of)
            if not self._members[key]:
                del self._members[key]
            self._classes.pop(key, None)
        for fmt in writes(p):
            _remove(self.writers, fmt, p, writer_order)
        self._file_namespace(p, group, -1)
        self.members[group].discard(i)
        resource = needed(p)
        if resource:
            _remove(self.checks, (group, min(resource)), p, _id)
        if is_connectivity_check(p):
            _remove(self.connectivity, group, p, _id)
        if is_getter(p):
            _remove(self.getters, (group, state_key(p)), p, _id)
        if is_setter(p):
            _remove(self.setters, (group, state_key(p)), p, _id)

    def _file_namespace(self, p: Profile, group: str, sign: int, sort: bool = True) -> None:
        """What depends on a tool's namespace: the tools by namespace word, and the logins by word."""
        for w in p.namespace:
            if sign > 0:
                (_insort if sort else _append)(self.by_namespace[w], p, _id)
                if p.capability == "authenticate":
                    self.logins[group, w].add(p.id)
            else:
                _remove(self.by_namespace, w, p, _id)
                if p.capability == "authenticate":
                    self.logins[group, w].discard(p.id)
                    if not self.logins[group, w]:
                        del self.logins[group, w]


def _id(p: Profile) -> str:
    return p.id


def _place_of(entry: Entry) -> tuple:
    return entry[0]


def _first_place(members: list) -> tuple:
    """Where a class's first member is filed in its bucket (classes are met in that order)."""
    place, producer, offer = members[0]
    return (*place, next(n for n, o in enumerate(offers(producer)) if o is offer))


def _append(items: list, item: Any, key: Any) -> None:
    items.append(item)


def _insort(items: list, item: Any, key: Any) -> None:
    insort(items, item, key=key)


def _remove(lists: dict, name: Any, item: Any, key: Any) -> None:
    """Take ``item`` out of the sorted list ``lists[name]`` (dropping the list when it empties)."""
    items = lists[name]
    at = bisect_left(items, key(item), key=key)
    while items[at] is not item and not (isinstance(item, tuple) and items[at] == item):
        at += 1
    del items[at]
    if not items:
        del lists[name]


__all__ = ["CatalogIndex", "Offer", "filings", "service_words"]
