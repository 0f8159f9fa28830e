"""Producers compete for a slot: no rule claims a parameter for itself.

Every rule (and the learned judge) proposes producers for a consumer's parameter with a calibrated
confidence (calibration.py). Authors who label data flows name 1.5-2 producers per consumer they label (a
repository comes from a search, a listing, a creation...), so a slot keeps every proposal above the
confidence cut, the most confident first, up to ``InferenceOptions.max_producers_per_slot`` (chosen
leave-one-catalog-out: ``benchmarks/rule_calibration.py``). Before, the REST rule kept a path parameter its
collection fed to itself and the typed join kept only its strongest kind of evidence; a rule's own word is
now a confidence like the others'.

Tool-level edges (no parameter) are not slots: each rule bounds them itself. The choice is per consumer, so
incremental sync makes it as a rebuild does.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from toolkg.models import InferredEdge


def compete(edges: Iterable[InferredEdge], cap: int) -> list[InferredEdge]:
    """``edges`` with each (consumer, parameter) slot's ``cap`` most confident producers (a producer of the
    consumer's own server before another's at equal confidence, then by id), in their given order."""
    edges = list(edges)
    slots: dict[tuple[str, str], list[InferredEdge]] = defaultdict(list)
    for e in edges:
        if e.parameter is not None:
            slots[e.consumer, e.parameter].append(e)
    beaten: set[int] = set()
    for proposals in slots.values():
        if len(proposals) <= cap:
            continue
        best: dict[str, InferredEdge] = {}  # a producer competes once, by its best proposal
        for e in proposals:
            if e.producer not in best or e.confidence > best[e.producer].confidence:
                best[e.producer] = e
        ranked = sorted(best.values(), key=_rank)
        winners = {e.producer for e in ranked[:cap]}
        beaten |= {id(e) for e in proposals if e.producer not in winners}
    return [e for e in edges if id(e) not in beaten] if beaten else edges


def _rank(e: InferredEdge) -> tuple[float, bool, str]:
    own = e.consumer.partition("::")[0] == e.producer.partition("::")[0]
    return (-e.confidence, not own, e.producer)
