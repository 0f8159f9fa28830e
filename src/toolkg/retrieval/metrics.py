"""Ranking metrics of the evaluation format (../shared/data/README.md), per query.

Gold tools are ``server::tool`` or a bare ``tool`` (matches that name on any server); a gold
tool with alternatives is hit by any of them. Each gold tool counts once, by its first hit.

>>> gold = [Gold("a", ("a",)), Gold("b", ("b",))]
>>> ranked = ["s::x", "s::a", "s::b"]
>>> recall_at(ranked, gold, 2), round(average_precision_at(ranked, gold, 3), 4)
(0.5, 0.5833)
>>> round(ndcg_at(ranked, gold, 3), 4), complete_at(ranked, gold, 2), complete_at(ranked, gold, 3)
(0.6934, 0.0, 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from toolkg.extractors.manifests.formats import server_id_from


@dataclass(frozen=True)
class Gold:
    name: str
    accepted: tuple[str, ...]  # the gold id and its alternatives


def gold_tools(row: dict) -> list[Gold]:
    """The row's gold tools, their server part written as toolkg writes server ids ("Ant Design
    Components::list-components" is hit by ``Ant-Design-Components::list-components``)."""
    alternatives = row.get("gold_tool_alternatives") or {}
    return [
        Gold(g, tuple(_as_id(a) for a in (g, *alternatives.get(g, ()))))
        for g in dict.fromkeys(row.get("gold_tools") or [])
    ]


def _as_id(name: str) -> str:
    server, sep, tool = name.partition("::")
    return f"{server_id_from(server)}::{tool}" if sep else name


def matches(tool_id: str, accepted: tuple[str, ...]) -> bool:
    """Whether a ranked ``server::tool`` id is one of a gold tool's accepted ids (a bare name: on any server)."""
    bare = tool_id.partition("::")[2]
    return any(a == tool_id if "::" in a else a == bare for a in accepted)


def hit_ranks(ranked: Sequence[str], gold: Sequence[Gold]) -> list[int]:
    """1-based rank at which each gold tool is first hit (a ranked tool satisfies one gold only)."""
    ranks, used = [], set()
    for g in gold:
        for rank, tool_id in enumerate(ranked, start=1):
            if rank not in used and matches(tool_id, g.accepted):
                used.add(rank)
                ranks.append(rank)
                break
    return sorted(ranks)


def recall_at(ranked: Sequence[str], gold: Sequence[Gold], k: int) -> float:
    return sum(r <= k for r in hit_ranks(ranked, gold)) / len(gold) if gold else 0.0


def average_precision_at(ranked: Sequence[str], gold: Sequence[Gold], k: int) -> float:
    """AP@k normalised by min(|gold|, k)."""
    if not gold:
        return 0.0
    ranks = [r for r in hit_ranks(ranked, gold) if r <= k]
    return sum((n + 1) / r for n, r in enumerate(ranks)) / min(len(gold), k)


def ndcg_at(ranked: Sequence[str], gold: Sequence[Gold], k: int) -> float:
    if not gold:
        return 0.0
    dcg = sum(1 / math.log2(r + 1) for r in hit_ranks(ranked, gold) if r <= k)
    ideal = sum(1 / math.log2(r + 1) for r in range(1, min(len(gold), k) + 1))
    return dcg / ideal


def complete_at(ranked: Sequence[str], gold: Sequence[Gold], k: int) -> float:
    return float(bool(gold) and recall_at(ranked, gold, k) == 1.0)


def server_recall_at(ranked_servers: Sequence[str], gold_servers: Sequence[str], k: int) -> float:
    gold = {server_id_from(s) for s in gold_servers}
    return len(gold & set(ranked_servers[:k])) / len(gold) if gold else 0.0
