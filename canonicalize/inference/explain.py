"""Why a tool has the dependencies it has, and not others: every proposal into one consumer and its fate.

``infer_dependencies`` (infer.py) keeps few of the edges its rules and the learned judge propose. An operator
who expected ``get_order(order_id) <- list_orders`` needs to know which step dropped it: the rule's calibrated
confidence under the cut, a fan-out cap, the judge's doubt, a stronger producer for the same slot, a loop.
``explain`` runs the same steps, with the same functions and inputs, and follows the consumer's proposals
through each, so its kept edges are exactly what ``infer_dependencies`` gives that consumer (a test checks it
on several catalogs). `toolkg deps --tool ID --explain` prints it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from toolkg.canonicalize.inference.acyclic import Changing, acyclic
from toolkg.canonicalize.inference.competition import compete
from toolkg.canonicalize.inference.index import CatalogIndex
from toolkg.canonicalize.inference.infer import (
    CROSS_CATALOG_CONFIDENCE,
    SURE,
    doubted,
    kept_across,
    rule_edges,
    sparsify_edges,
    with_learned,
)
from toolkg.canonicalize.inference.pairs import Judgement, judge
from toolkg.canonicalize.inference.profiles import profile_of
from toolkg.config import InferenceOptions
from toolkg.models import InferredEdge, Tool

KEPT = "kept"
DROPPED = "dropped"


@dataclass(frozen=True)
class Considered:
    """One proposal into the consumer: the edge as proposed, whether it is in the output, and why."""

    edge: InferredEdge
    fate: str  # KEPT or DROPPED
    reason: str

    def as_dict(self) -> dict:
        e = self.edge
        return {
            "producer": e.producer,
            "parameter": e.parameter,
            "kind": e.kind,
            "rule": e.rule,
            "confidence": e.confidence,
            "evidence": e.evidence,
            "fate": self.fate,
            "reason": self.reason,
        }


def explain(
    tools: Sequence[Tool],
    consumer: str,
    options: InferenceOptions | None = None,
    declared: Iterable[tuple[str, str]] = (),
    catalogs: Mapping[str, str] | None = None,
) -> list[Considered]:
    """Every rule proposal and learned edge into ``consumer`` over the catalog ``tools``, with its fate: the
    steps of ``infer_dependencies`` in order, each dropping some of them for a reason it states."""
    return explain_all(tools, {consumer}, options, declared, catalogs).get(consumer, [])


def explain_all(
    tools: Sequence[Tool],
    consumers: Collection[str],
    options: InferenceOptions | None = None,
    declared: Iterable[tuple[str, str]] = (),
    catalogs: Mapping[str, str] | None = None,
) -> dict[str, list[Considered]]:
    """``explain`` for each of ``consumers`` (one inference over the catalog for all of them)."""
    options = options or InferenceOptions()
    declared = set(declared)
    index = CatalogIndex(tools, options, catalogs)
    everyone = [profile_of(t) for t in tools]
    edges = rule_edges(index, everyone)
    judgement = judge(tools, edges, options.learned_threshold, options.learned_veto) if options.learned else None
    judgement = judgement or Judgement([], set())
    mine = [e for e in edges if e.consumer in consumers]
    fates: dict[int, str] = {}  # id(edge) -> why it went, for every proposal that did

    def drop(edge: InferredEdge, reason: str) -> None:
        fates.setdefault(id(edge), reason)

    if catalogs:
        for e in mine:
            if not kept_across(e, catalogs):
                drop(e, f"its producer is in another catalog and its confidence is under {CROSS_CATALOG_CONFIDENCE}")
        edges = [e for e in edges if kept_across(e, catalogs)]
    hubs = {p.id for p in everyone if not p.needs_input}
    fanout = Counter((e.producer, e.rule) for e in edges)
    sparse = sparsify_edges(edges, options, declared, hubs)
    survivors = {id(e) for e in sparse}
    strongest = {(e.consumer, e.producer, e.parameter): e for e in sparse}
    for e in mine:
        if id(e) not in survivors and id(e) not in fates:
            drop(e, _sparsified(e, options, declared, hubs, fanout, strongest))
    kept = [e for e in sparse if not doubted(e, judgement)]
    for e in sparse:
        if e.consumer in consumers and doubted(e, judgement):
            drop(e, f"the learned judge gives every proposal of this pair under {options.learned_veto} (learned_veto)")
    added = with_learned(kept, judgement.edges, declared, options)
    learned = [e for e in judgement.edges if e.consumer in consumers]
    in_added = {id(e) for e in added}
    kept_pairs = {(e.consumer, e.producer) for e in kept}
    for e in learned:
        if id(e) not in in_added:
            rule_kept = (e.consumer, e.producer) in kept_pairs
            drop(e, "a rule's edge of the same pair is kept" if rule_kept else _learned_reason(e, declared, options))
    competed = compete(added, options.max_producers_per_slot)
    in_competed = {id(e) for e in competed}
    for e in added:
        if e.consumer in consumers and id(e) not in in_competed:
            drop(e, f"{options.max_producers_per_slot} more confident producers fill {e.parameter} "
                    "(max_producers_per_slot)")  # fmt: skip
    final = acyclic(competed, declared, Changing.of_profiles(index.profiles))
    in_final = {id(e) for e in final}
    for e in competed:
        if e.consumer in consumers and id(e) not in in_final:
            drop(e, "it would close a loop of prerequisites (acyclic.py): the other direction is kept")
    out: dict[str, list[Considered]] = {i: [] for i in consumers}
    for e in final:
        if e.consumer in consumers:
            out[e.consumer].append(Considered(e, KEPT, "in the output"))
    for e in (*mine, *learned):
        if id(e) in fates:
            out[e.consumer].append(Considered(e, DROPPED, fates[id(e)]))
    for found in out.values():
        found.sort(key=lambda c: (c.fate != KEPT, c.edge.parameter or "", -c.edge.confidence, c.edge.producer))
    return out


def _sparsified(
    e: InferredEdge,
    options: InferenceOptions,
    declared: set[tuple[str, str]],
    hubs: set[str],
    fanout: Counter,
    strongest: Mapping[tuple[str, str, str | None], InferredEdge],
) -> str:
    """Why ``sparsify_edges`` left a proposal out (its checks, in its order)."""
    if e.confidence < options.min_confidence:
        return f"its calibrated confidence {e.confidence:.2f} is under min_confidence {options.min_confidence}"
    if (e.consumer, e.producer) in declared:
        return "the manifest declares this pair"
    if fanout[e.producer, e.rule] > options.weak_fanout_cap and e.confidence < SURE and e.producer not in hubs:
        return (
            f"the rule {e.rule} links {e.producer} to {fanout[e.producer, e.rule]} consumers, over weak_fanout_cap "
            f"{options.weak_fanout_cap}"
        )
    stronger = strongest.get((e.consumer, e.producer, e.parameter))
    if stronger is not None:
        return f"a more confident proposal of the same pair is kept (rule {stronger.rule})"
    return "a producer of the consumer's own server fills this parameter"


def _learned_reason(e: InferredEdge, declared: set[tuple[str, str]], options: InferenceOptions) -> str:
    if (e.consumer, e.producer) in declared:
        return "the manifest declares this pair"
    return f"its probability {e.confidence:.2f} is under min_confidence {options.min_confidence}"


__all__ = ["DROPPED", "KEPT", "Considered", "explain", "explain_all"]
