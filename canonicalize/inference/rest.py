"""REST collections: a path parameter takes an identifier the collection before it lists or creates.

An HTTP API names its resources by path: ``GET /repos/{owner}/{repo}/issues/{issue_number}`` takes the
number of one issue, and ``GET /repos/{owner}/{repo}/issues`` (the listing) and ``POST
/repos/{owner}/{repo}/issues`` (the creation) are the operations that return issues and their numbers. So
each path parameter that follows a literal segment is fed by the operations of the same server whose route
is that collection: the same path up to the segment, path parameters matched by position whatever their
names, read with GET or created with POST. It reads only routes (``tk:httpRoute``, what an OpenAPI
description gives), never a catalog's own words. It claims no slot: a member is also fed by searches, other
collections and related items whose responses carry it, which other rules find; the producers compete by
confidence (competition.py).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from toolkg.canonicalize.inference.calibration import CONFIDENCE
from toolkg.canonicalize.inference.profiles import PARAMETER_DIRECT, PARAMETER_INDIRECT, Profile
from toolkg.models import InferredEdge

RULE = "rest-collection"
_PARAMETER = re.compile(r"^\{([^{}]+)\}$")
# what each method of a collection route does with its members: lists them, or makes one and returns it
_FEEDS = {"GET": "lists", "POST": "creates"}


def _split(route: str) -> tuple[str, list[str]]:
    method, _, path = route.partition(" ")
    return method.upper(), [s for s in path.split("?")[0].strip("/").split("/") if s]


def _shape(segments: Sequence[str]) -> tuple[str, ...]:
    """A path with its parameters blanked: routes naming them differently are the same collection."""
    return tuple("{}" if _PARAMETER.match(s) else s for s in segments)


Collections = dict[tuple[str, ...], list[tuple[str, Profile]]]


def collections(members: Iterable[Profile]) -> Collections:
    """One server's collection routes (GET or POST on a path ending in a literal segment), by shape: each
    (method, tool), listings first, then by id."""
    found: Collections = defaultdict(list)
    for p in members:
        if p.tool.route:
            method, segments = _split(p.tool.route)
            if method in _FEEDS and segments and not _PARAMETER.match(segments[-1]):
                found[_shape(segments)].append((method, p))
    for routes in found.values():
        routes.sort(key=lambda route: (route[0], route[1].id))
    return found


def rest_edges(by_server: Mapping[str, list[Profile]], consumers: Iterable[Profile]) -> list[InferredEdge]:
    """Each path parameter's edges from the collection before it (listing first, then creation)."""
    edges: list[InferredEdge] = []
    indexes: dict[str, Collections] = {}
    for consumer in consumers:
        if not consumer.tool.route:
            continue
        server = consumer.tool.server_id
        if server not in indexes:
            indexes[server] = collections(by_server.get(server, ()))
        by_shape = indexes[server]
        _, segments = _split(consumer.tool.route)
        parameters = {p.name: p for p in consumer.tool.parameters if p.location == "path"}
        for at, segment in enumerate(segments):
            named = _PARAMETER.match(segment)
            if not named or at == 0 or _PARAMETER.match(segments[at - 1]) or named.group(1) not in parameters:
                continue
            parameter = parameters[named.group(1)]
            for method, producer in by_shape.get(_shape(segments[:at]), ()):
                if producer is consumer:
                    continue
                edges.append(
                    InferredEdge(
                        consumer=consumer.id,
                        producer=producer.id,
                        kind=PARAMETER_DIRECT if parameter.required else PARAMETER_INDIRECT,
                        parameter=parameter.name,
                        confidence=CONFIDENCE[f"rest {_FEEDS[method]}"],
                        rule=RULE,
                        evidence=f"{parameter.name} <- {producer.tool.route} ({_FEEDS[method]} the "
                        f"{segments[at - 1]} {consumer.tool.route} takes one of)",
                    )
                )
    return edges
