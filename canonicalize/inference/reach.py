"""Which consumers a change to a catalog reaches, rule by rule (incremental.py asks only those again).

A changed tool is seen in each version it had (as filed before the change) and has (after it): a removed
tool in its old one, an added tool in its new one, a tool whose catalog or namespace changed in both. For
each rule, a version reaches:

- output -> parameter: a consumer whose parameter reads the bucket one of its offers is filed under, and
  read the offer's class past the offer's place (``other_server_producers``' cut-offs), or would read a
  class the offer makes;
- mentions: the consumers whose mentions may name it, and the consumers (with mentions) that share a
  namespace word with it;
- logins: the tools of its catalog that carry its namespace (a login's);
- preconditions: the tools of its catalog whose text holds the resource it checks (a status check's: a
  scan of the catalog, counted in ``wide``);
- file formats, connectivity, read-before-write: whatever the index's first two writers of a format, a
  catalog's connectivity checks or a state's getters and setters were before and are after (a catalog's one
  connectivity check changing reaches all its tools, counted in ``wide``).

Every tool of a changed server is asked again by every rule (a server reads its own tools: identifiers,
openers, own-server producers, its size), and so is each changed tool. A consumer with an edge from a
changed tool is asked again by the rule that gave it (all the above should find it; this costs little and
keeps the edge from standing on a reading missed).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

from toolkg.canonicalize.inference.candidates import class_of, offer_match, travels_anywhere
from toolkg.canonicalize.inference.files import read_formats, writes
from toolkg.canonicalize.inference.identifiers import MAX_SERVER_TOOLS
from toolkg.canonicalize.inference.index import CatalogIndex, filings
from toolkg.canonicalize.inference.infer import candidate_keys
from toolkg.canonicalize.inference.mentions import mention_tokens
from toolkg.canonicalize.inference.profiles import Offer, Profile, profile_of
from toolkg.canonicalize.inference.roles import is_connectivity_check, is_getter, is_setter, needed, state_key
from toolkg.models import Tool

RULE_NAMES = (
    "parameter",
    "mention",
    "identifier",
    "opener",
    "server login",
    "rest",
    "join",
    "file",
    "login",
    "precondition",
    "connectivity",
    "state",
)
# A version of a tool: its profile, the catalog it is (or was) filed in, its namespace then.
Version = tuple[Profile, str, frozenset[str]]


class Reach:
    """What the consumers of a kept index read, so that a change finds them (the module doc)."""

    def __init__(self, index: CatalogIndex) -> None:
        self.index = index
        self.cutoffs: dict[str, dict] = {}  # consumer -> (bucket key, offer class) -> place its read stopped at
        self.readers: dict[tuple[str, ...], set[str]] = defaultdict(set)  # bucket key -> consumers reading it
        self.names: dict[str, set[str]] = defaultdict(set)  # a name a mention may name -> consumers
        self.formats: dict[str, set[str]] = defaultdict(set)  # file format -> consumers reading it
        self.mentioning: set[str] = set()  # consumers with a mention that may name a tool
        self.wide: Counter[str] = Counter()  # the last change's wide cases

    def register(self, p: Profile) -> None:
        i = p.id
        for key in {k for _, _, keys in candidate_keys(p) for k in keys}:
            self.readers[key].add(i)
        tokens = mention_tokens(p.tool)
        for name in tokens:
            self.names[name].add(i)
        if tokens:
            self.mentioning.add(i)
        for fmt in read_formats(p):
            self.formats[fmt].add(i)

    def unregister(self, p: Profile) -> None:
        i = p.id
        for key in {k for _, _, keys in candidate_keys(p) for k in keys}:
            _discard(self.readers, key, i)
        for name in mention_tokens(p.tool):
            _discard(self.names, name, i)
        self.mentioning.discard(i)
        for fmt in read_formats(p):
            _discard(self.formats, fmt, i)
        self.cutoffs.pop(i, None)

    # --- a change -------------------------------------------------------------------------------------

    def before(
        self, old: Mapping[str, Profile], fresh: Mapping[str, tuple[Tool, str]], regrouped: Iterable[str]
    ) -> dict:
        """What the index says, before the change, of what the change's versions can alter; and the old
        versions as filed."""
        index = self.index
        versions = [(p, index.groups[i], frozenset(p.namespace)) for i, p in old.items()]
        versions += [(index.profiles[i], index.groups[i], frozenset(index.profiles[i].namespace)) for i in regrouped]
        coming: list[Version] = [(profile_of(t), group, frozenset()) for t, group in fresh.values()]
        coming += [(index.profiles[i], index.group(index.profiles[i]), frozenset()) for i in regrouped]
        keys = {key for version in versions + coming for key in _watched(version)}
        return {"old": versions, "keys": keys, "seen": self._snapshot(keys)}

    def after(
        self,
        before: dict,
        added: list[Profile],
        namespaces: Mapping[str, frozenset[str]],
        regrouped: set[str],
        servers: set[str],
        rules: Mapping[str, Mapping[str, list]],
        by_producer: Mapping[str, set[str]],
    ) -> dict[str, set[str]]:
        """After the index took the change: rule -> the consumers to ask again. ``namespaces``: the tools
        whose namespace changed, with the one they had; ``rules`` and ``by_producer`` the consumers' edges
        as they stood."""
        index, self.wide = self.index, Counter()
        asked: dict[str, set[str]] = defaultdict(set)
        everything = {p.id for p in added} | regrouped | set(namespaces)
        everything |= {p.id for s in servers for p in index.by_server.get(s, ())}
        for s in {i.partition("::")[0] for i in namespaces}:  # own-server reads of a namespace
            ids = {p.id for p in index.by_server.get(s, ())}
            asked["parameter"] |= ids
            asked["mention"] |= ids
        versions: list[Version] = list(before["old"])
        versions += [(p, index.groups[p.id], frozenset(p.namespace)) for p in added]
        for i in regrouped | set(namespaces):
            p = index.profiles[i]
            versions.append((p, index.groups[i], frozenset(p.namespace)))
        for i, namespace in namespaces.items():
            versions.append((index.profiles[i], index.groups[i], namespace))
        self._watch(before, asked)
        for version in versions:
            self._parameter(version, asked["parameter"], everything)
            self._mention(version, asked["mention"])
            self._login(version, asked["login"])
        self._preconditions(versions, asked["precondition"])
        for i in namespaces:  # a getter's or setter's nearness changed
            p = index.profiles[i]
            if is_getter(p) or is_setter(p):
                group, key = index.groups[i], state_key(p)
                peers = (*index.getters.get((group, key), ()), *index.setters.get((group, key), ()))
                asked["state"] |= {q.id for q in peers}
        for producer in {p.id for p, _, _ in before["old"]} | regrouped | set(namespaces):
            for consumer in by_producer.get(producer, ()):
                for rule, edges in rules.get(consumer, {}).items():
                    if rule != "connectivity" and any(e.producer == producer for e in edges):
                        asked[rule].add(consumer)
        for rule in RULE_NAMES:
            asked[rule] |= everything
        return asked

    # --- by rule ------------------------------------------------------------------------------------

    def _parameter(self, version: Version, asked: set[str], skip: set[str]) -> None:
        p = version[0]
        for key, (place, _, offer) in filings(p):
            sig, at = (key, class_of(offer)), place[:3]
            for c in self.readers.get(key, ()):
                if c in asked or c in skip:
                    continue
                cut = self.cutoffs.get(c, {}).get(sig)
                if (at < cut) if cut is not None else self._would_read(c, key, offer):
                    asked.add(c)

    def _would_read(self, consumer: str, key: tuple[str, ...], offer: Offer) -> bool:
        """Whether a parameter of ``consumer`` reading ``key`` would read a class of offers like this one
        (a class it has no cut-off for: none was filed, or it did not match)."""
        c = self.index.profiles.get(consumer)
        if c is None:
            return False
        cohesive = self.index.server_sizes[c.tool.server_id] <= MAX_SERVER_TOOLS
        for _, words, keys in candidate_keys(c):
            if key in keys:
                match = offer_match(offer, words, cohesive)
                if match is not None and (c.namespace or travels_anywhere(offer, match[0], words)):
                    return True
        return False

    def _mention(self, version: Version, asked: set[str]) -> None:
        p, _, namespace = version
        asked |= self.names.get(p.tool.name.lower(), set())
        for w in namespace:
            asked |= {q.id for q in self.index.by_namespace.get(w, ()) if q.id in self.mentioning}

    def _login(self, version: Version, asked: set[str]) -> None:
        p, group, namespace = version
        if p.capability == "authenticate":
            for w in namespace:
                members = self.index.by_namespace.get(w, ())
                asked |= {q.id for q in members if self.index.groups[q.id] == group}

    def _preconditions(self, versions: list[Version], asked: set[str]) -> None:
        index = self.index
        for group, need in {(group, needed(p)) for p, group, _ in versions if needed(p)}:
            self.wide["precondition scan"] += 1
            asked |= {i for i in index.members.get(group, ()) if need <= index.profiles[i].text_lemmas}

    def _watch(self, before: dict, asked: dict[str, set[str]]) -> None:
        index, now = self.index, self._snapshot(before["keys"])
        for key, then in before["seen"].items():
            if now[key] == then:
                continue
            if key[0] == "writers":
                asked["file"] |= self.formats.get(key[1], set())
            elif key[0] == "connectivity":
                if _single(then) != _single(now[key]):
                    self.wide["connectivity"] += 1
                    asked["connectivity"] |= index.members.get(key[1], set())
            else:
                asked["state"] |= set(then) | set(now[key])

    def _snapshot(self, keys: Iterable[tuple]) -> dict[tuple, tuple]:
        index, seen = self.index, {}
        for key in keys:
            if key[0] == "writers":
                found = index.writers.get(key[1], [])[:2]
            elif key[0] == "connectivity":
                found = index.connectivity.get(key[1], [])
            else:
                found = [*index.getters.get(key[1:], ()), *index.setters.get(key[1:], ())]
            seen[key] = tuple(p.id for p in found)
        return seen


def _watched(version: Version) -> list[tuple]:
    """The index lists a version's change can alter, that a rule reads whole."""
    p, group, _ = version
    keys: list[tuple] = [("writers", fmt) for fmt in writes(p)]
    if is_connectivity_check(p):
        keys.append(("connectivity", group))
    if is_getter(p) or is_setter(p):
        keys.append(("state", group, state_key(p)))
    return keys


def _single(ids: tuple) -> str | None:
    return ids[0] if len(ids) == 1 else None


def _discard(sets: dict, key: object, item: str) -> None:
    found = sets.get(key)
    if found is not None:
        found.discard(item)
        if not found:
            del sets[key]
