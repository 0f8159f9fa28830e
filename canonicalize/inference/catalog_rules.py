"""The rules that read a whole catalog (infer.py's rules 2-4), asked per consumer through the index.

Each runs within one catalog (``catalogs`` of ``infer_dependencies``): a service's login precedes the tools
of that service, a status check precedes the tools that mention what it checks, the one connectivity check
precedes every tool that reaches an outside service, and a setter reads its state first with the one getter
of that state (which, when it is a status check, is followed by the setter when the state is off).

A consumer's edges are read from the ``CatalogIndex`` (its catalog's logins by namespace word, status checks
by a word of their resource, connectivity checks, getters and setters by state), not by scanning the catalog,
so incremental sync can re-ask the few consumers a change reaches. Every edge a consumer gets comes in the
order a scan of the catalog would give it (its producers' catalog order), so ties break as they always have.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from toolkg.canonicalize.inference.calibration import CONFIDENCE
from toolkg.canonicalize.inference.profiles import (
    LOCAL_CAPABILITIES,
    PARAMETER_DIRECT,
    STATUS_WORDS,
    TOOL_DIRECT,
    TOOL_INDIRECT,
    Profile,
    is_near,
    session_parameter,
)
from toolkg.canonicalize.inference.roles import is_getter, is_setter, needed, resource, state_key
from toolkg.models import InferredEdge

if TYPE_CHECKING:
    from toolkg.canonicalize.inference.index import CatalogIndex


def catalog_rule_edges(index: CatalogIndex, consumers: Iterable[Profile]) -> list[InferredEdge]:
    """The four rules' edges into ``consumers``, rule by rule (each consumer's in its producers' order)."""
    consumers = list(consumers)
    return [
        *namespace_auth_edges(index, consumers),
        *precondition_edges(index, consumers),
        *connectivity_edges(index, consumers),
        *read_before_write_edges(index, consumers),
    ]


def namespace_auth_edges(index: CatalogIndex, consumers: Iterable[Profile]) -> list[InferredEdge]:
    """A service's login (an authenticating tool whose rare name tokens name the service) precedes every
    other tool of its catalog whose name carries all of those tokens."""
    edges = []
    for consumer in consumers:
        if consumer.capability == "authenticate" or not consumer.namespace:
            continue
        group = index.group(consumer)
        found = {a for w in consumer.namespace for a in index.logins.get((group, w), ())}
        for auth in sorted((index.profiles[a] for a in found), key=index.rank):
            if not auth.namespace <= consumer.namespace:
                continue
            brand = sorted(auth.namespace)
            session = session_parameter(consumer.tool)
            edges.append(
                InferredEdge(
                    consumer=consumer.id,
                    producer=auth.id,
                    kind=PARAMETER_DIRECT if session else TOOL_DIRECT,
                    parameter=session,
                    confidence=CONFIDENCE["login with session parameter" if session else "login"],
                    rule="namespace-authentication",
                    evidence=f"{auth.tool.name} authenticates '{' '.join(brand)}', which {consumer.tool.name} names",
                )
            )
    return edges


def tool_edge(
    consumer: Profile, producer: Profile, confidence: float, rule: str, evidence: str, kind: str = TOOL_DIRECT
) -> InferredEdge:
    """A tool-level edge (no parameter): preconditions, read-before-write, enable-if-off."""
    return InferredEdge(
        consumer=consumer.id,
        producer=producer.id,
        kind=kind,
        parameter=None,
        confidence=confidence,
        rule=rule,
        evidence=evidence,
    )


def precondition_edges(index: CatalogIndex, consumers: Iterable[Profile]) -> list[InferredEdge]:
    """A status check precedes the tools whose text mentions the resource it checks."""
    edges = []
    for consumer in consumers:
        if STATUS_WORDS & set(consumer.object_words):  # a status tool is no consumer
            continue
        group, lemmas = index.group(consumer), consumer.text_lemmas
        # a check is filed under one lemma of its resource: the consumer's text must hold that one
        found = [c for w in lemmas for c in index.checks.get((group, w), ())]
        for check in sorted(found, key=index.rank):
            if check is not consumer and needed(check) <= lemmas:
                evidence = f"{consumer.tool.name} mentions {' '.join(resource(check))}, which {check.tool.name} checks"
                edges.append(
                    tool_edge(consumer, check, CONFIDENCE["resource precondition"], "resource-precondition", evidence)
                )
    return edges


def connectivity_edges(index: CatalogIndex, consumers: Iterable[Profile]) -> list[InferredEdge]:
    """A connectivity check (a status check whose text is about connectivity) is a precondition of
    every tool that reaches an outside service: one that takes input and is not a local
    computation. Weak evidence (one rule for a whole class), hence a low confidence."""
    edges = []
    for consumer in consumers:
        checks = index.connectivity.get(index.group(consumer), ())
        if len(checks) != 1:  # none, or several with nothing to choose between them
            continue
        (check,) = checks
        # a context getter or device setting (no input) and a local computation work offline
        if consumer is not check and consumer.needs_input and consumer.capability not in LOCAL_CAPABILITIES:
            edges.append(
                tool_edge(
                    consumer,
                    check,
                    CONFIDENCE["connectivity precondition"],
                    "connectivity-precondition",
                    f"{consumer.tool.name} reaches an outside service; {check.tool.name} checks connectivity",
                )
            )
    return edges


def chosen_getter(index: CatalogIndex, setter: Profile) -> Profile | None:
    """The one near getter (same server or service) of the state ``setter`` changes, or None when none or
    several. Another server's getter reads another state of the same name: a PowerPoint server's
    ``list_files`` says nothing of the files a filesystem server's ``write_file`` changes."""
    found = index.getters.get((index.group(setter), state_key(setter)), ())
    near = [g for g in found if is_near(g, setter)]
    return near[0] if len(near) == 1 else None


def read_before_write_edges(index: CatalogIndex, consumers: Iterable[Profile]) -> list[InferredEdge]:
    """A setter reads its state first with the getter of that state; a status check that finds the state
    off is followed by the setter (``toolIndirectlyDependsOn`` both)."""
    edges = []
    for consumer in consumers:
        if is_setter(consumer):
            getter = chosen_getter(index, consumer)
            if getter is not None:
                state = " ".join(state_key(consumer))
                evidence = f"{consumer.tool.name} changes the {state} {getter.tool.name} reads"
                edges.append(
                    tool_edge(
                        consumer, getter, CONFIDENCE["read before write"], "read-before-write", evidence, TOOL_INDIRECT
                    )
                )
        elif consumer.is_status_check and is_getter(consumer):
            key = state_key(consumer)
            for setter in index.setters.get((index.group(consumer), key), ()):
                if chosen_getter(index, setter) is consumer:
                    state = " ".join(key)
                    evidence = f"when the {state} {consumer.tool.name} reports is off, {setter.tool.name} sets it"
                    confidence = CONFIDENCE["enable if off"]
                    edges.append(tool_edge(consumer, setter, confidence, "enable-if-off", evidence, TOOL_INDIRECT))
    return edges
