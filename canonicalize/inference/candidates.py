"""Which producers may fill a parameter: a bucket of offers read in tie-break order, the consumer's own
server scanned, other servers judged once per class of offer (the parameter rule of canonicalize/inference/infer.py)."""

from __future__ import annotations

from collections.abc import Sequence

from toolkg.canonicalize.inference.profiles import Offer, Profile, canonical_key, generalises, is_near, parameter_match
from toolkg.text.lexicon import UNIVERSAL_VALUES

Candidate = tuple[float, Profile, Offer, str]  # (score, producer, offer, how it matches)
# A bucket entry: (its place in the bucket, producer, offer). The place is ``order`` and the offer's
# position among its producer's offers (one producer may file two offers under one key).
Entry = tuple[tuple, Profile, Offer]
# The cut-off of a class read to its end: later than any place; of a class not read: before any.
EXHAUSTED = (2,)
NOT_READ = ()


def order(producer: Profile, offer: Offer, key: tuple[str, ...]) -> tuple:
    """A bucket's tie-break order: offers of its own key first, then fewest parameters, then id."""
    return (offer.key != key, len(producer.tool.parameters), producer.id)


def class_of(offer: Offer) -> tuple:
    """What makes offers match and travel alike (``offer_classes``)."""
    return (offer.key, offer.described, offer.contextual)


def offer_match(offer: Offer, words: list[str], cohesive: bool) -> tuple[float, str] | None:
    match = parameter_match(offer, words)
    if match is None or (not cohesive and generalises(offer, words)):
        return None  # 'a car ownership rate is a rate' says little in a catalog-sized server
    return match


def own_server_producers(
    bucket: Sequence[Entry], consumer: Profile, words: list[str], cohesive: bool, wanted: int, seen: set
) -> list[Candidate]:
    """The first ``wanted`` offers of the consumer's own server that fill the parameter (a server's
    bucket holds at most its own tools: scanned)."""
    found: list[Candidate] = []
    for _, producer, offer in bucket:
        if len(found) == wanted:
            break
        if producer is consumer or (producer.namespace and not producer.namespace & consumer.namespace):
            continue  # a service's own tools feed that service only
        if (id(producer), offer.key) in seen:
            continue
        match = offer_match(offer, words, cohesive)
        if match is not None:
            found.append((match[0], producer, offer, match[1]))
    return found


def offer_classes(bucket: Sequence[Entry]) -> list[tuple[Offer, list]]:
    """A sorted bucket split into classes of offers that match and travel alike (same key, same
    source, same context), each class in the bucket's order, with that order kept for merging."""
    classes: dict[tuple, tuple[Offer, list]] = {}
    for place, producer, offer in bucket:
        _, members = classes.setdefault(class_of(offer), (offer, []))
        members.append((place[:3], producer, offer))
    return list(classes.values())


def other_server_producers(
    classes: Sequence[tuple[Offer, list]],
    consumer: Profile,
    words: list[str],
    cohesive: bool,
    wanted: int,
    seen: set,
    cutoffs: dict | None = None,
    key: tuple[str, ...] = (),
) -> list[Candidate]:
    """The first ``wanted`` offers of other servers, in the bucket's order, that fill the parameter.

    Whether an offer fills a parameter, and whether it may cross servers, depends on its class, not
    on the tool making it (except nearness: a shared service namespace). So each class is judged
    once and read only up to its ``wanted``-th acceptable member; the first ``wanted`` of the whole
    bucket are among those. A 100k-tool catalog's buckets hold thousands of offers: scanning them
    for every parameter was quadratic.

    ``cutoffs`` (incremental sync) records, per (``key``, class), the place of the first member not read
    (``NOT_READ`` for a class not read at all): an offer filed there or later cannot change what this
    parameter takes."""
    found = []
    for rep, members in classes:
        match = offer_match(rep, words, cohesive)
        anywhere = match is not None and travels_anywhere(rep, match[0], words)
        if match is None or (not anywhere and not consumer.namespace):
            # it fills no such parameter, or may fill only a near tool's and no other server's tool is near
            if cutoffs is not None:
                cutoffs.setdefault((key, class_of(rep)), NOT_READ)
            continue
        taken, last = 0, EXHAUSTED
        for order, producer, offer in members:
            if taken == wanted:
                last = order
                break
            if producer.tool.server_id == consumer.tool.server_id:
                continue  # read from its server's own bucket already
            if producer.namespace and not producer.namespace & consumer.namespace:
                continue  # a service's own tools feed that service only
            if (id(producer), offer.key) in seen or not (anywhere or is_near(producer, consumer)):
                continue
            found.append((order, match[0], producer, offer, match[1]))
            taken += 1
        if cutoffs is not None:
            sig = (key, class_of(rep))
            cutoffs[sig] = max(cutoffs.get(sig, last), last)
    found.sort(key=lambda f: f[0])
    return [f[1:] for f in found[:wanted]]


def travels_anywhere(offer: Offer, score: float, words: list[str]) -> bool:
    """Whether an offer can fill a parameter of any server, not only a near one (same server or
    service namespace). A bare reference (an ``id``, a ``ticker``, a ``category``) means something
    only on the platform that issued it; a value of a universal type (a coordinate, a date, an
    email, a PDF) means the same everywhere, and so does a reference the parameter names in full
    (``city_code`` filled by what ``get_city_code`` returns) or the user's context that a parameter
    asks for by a qualified name (``system_uptime``, ``current_bpm``)."""
    if offer.key[-1] in UNIVERSAL_VALUES or (score >= 1.0 and len(offer.key) >= 2):
        return True
    full = canonical_key(words)
    return offer.contextual and len(full) >= 2 and full[-len(offer.key) :] == offer.key
