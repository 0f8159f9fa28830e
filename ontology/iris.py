"""Deterministic IRIs: the same catalog key always gives the same node.

>>> tool_iri("weather", "get forecast").value
'https://w3id.org/toolkg/id/tool/weather/get%20forecast'

Named graphs are minted in ``ontology/graphs.py``.
"""

from __future__ import annotations

import hashlib
import re

from pyoxigraph import NamedNode

from toolkg.ontology import ID_BASE, quote_segment

# Named graphs have their own module; these names are re-exported for code that still spells them
# ``iris.server_graph`` (toolkg.flows.sync, the extractors, tests).
from toolkg.ontology.graphs import (  # noqa: F401
    EXTRACTION_GRAPH_PREFIX,
    MANIFESTS_GRAPH,
    PROVENANCE_GRAPH,
    SERVER_GRAPH_PREFIX,
    extraction_graph,
    server_graph,
)

BASE = ID_BASE

_SLUG_RE = re.compile(r"[^\w]+", re.UNICODE)
_q = quote_segment


def slug(text: str) -> str:
    """Lower-case words joined by '-', for entity keys ('Line of Business' -> 'line-of-business')."""
    return _SLUG_RE.sub("-", text.strip().lower()).strip("-") or "_"


def short_hash(*parts: str, length: int = 16) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:length]


def server_iri(server_id: str) -> NamedNode:
    return NamedNode(f"{BASE}server/{_q(server_id)}")


def tool_iri(server_id: str, tool_name: str) -> NamedNode:
    return NamedNode(f"{BASE}tool/{_q(server_id)}/{_q(tool_name)}")


def tool_iri_from_id(tool_id: str) -> NamedNode:
    server_id, _, name = tool_id.partition("::")
    return tool_iri(server_id, name)


def parameter_iri(tool: NamedNode, name: str, location: str = "argument") -> NamedNode:
    # OpenAPI may reuse a name in two locations (an 'id' in the path and in the query).
    where = "" if location in ("argument", "body") else f"{location}/"
    return NamedNode(f"{tool.value}/param/{where}{_q(name)}")


def output_iri(tool: NamedNode, name: str) -> NamedNode:
    return NamedNode(f"{tool.value}/output/{_q(name)}")


def dependency_iri(consumer: NamedNode, kind: str, producer: NamedNode, parameter: str | None) -> NamedNode:
    return NamedNode(f"{consumer.value}/dep/{short_hash(kind, producer.value, parameter or '')}")


def link_iri(source: NamedNode, kind: str, target: NamedNode) -> NamedNode:
    return NamedNode(f"{source.value}/link/{short_hash(kind, target.value)}")


def finding_iri(tool: NamedNode, kind: str, where: str, evidence: str) -> NamedNode:
    """One finding of a tool: ``<tool>/finding/<kind>-<hash of where and evidence>``."""
    return NamedNode(f"{tool.value}/finding/{_q(kind)}-{short_hash(where, evidence, length=12)}")


def entity_iri(entity_type: str, label: str) -> NamedNode:
    """An entity by ontology type and canonical name: ``entity/line-of-business/finance``."""
    kind = re.sub(r"(?<=[a-z])(?=[A-Z])", "-", entity_type)
    return NamedNode(f"{BASE}entity/{slug(kind)}/{_q(slug(label))}")


def manifest_iri(path: str) -> NamedNode:
    return NamedNode(f"{BASE}manifest/{short_hash(path)}")


def run_iri(run_id: str) -> NamedNode:
    return NamedNode(f"{BASE}run/{_q(run_id)}")


def agent_iri(name: str, version: str) -> NamedNode:
    return NamedNode(f"{BASE}agent/{_q(name)}/{_q(version)}")
