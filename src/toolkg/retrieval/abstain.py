"""Abstention: tool search answers nothing rather than k weak matches when no tool serves the request.

The signal is the best tool's score in ``auto``'s ranking: the calibrated probability that the request
needs that tool (``calibration.text_probability``; it already weighs how well the request's best tool
matched). A request whose best score is below ``min_best_score`` gets no tools. The threshold is chosen by
``benchmarks/abstention_bench.py`` on the retrieval suite's tuning halves (the highest that costs each
catalog at most a set share of R@10) against requests no tool answers (``data/irrelevant/``), checked
leave-one-catalog-out, and shipped in ``abstain.json``. Callers may pass their own ``min_score``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

ABSTAIN_FILE = Path(__file__).with_name("abstain.json")


@cache
def default_min_score() -> float:
    """The shipped threshold (0.0, never abstain, when the file is missing)."""
    try:
        return float(json.loads(ABSTAIN_FILE.read_text(encoding="utf-8"))["min_best_score"])
    except FileNotFoundError:
        return 0.0


def request_score(hits) -> float:
    """The best score of the ranking's tools (a need the request only implies counts too: on the suite's
    tuning halves, leaving those out lowered the threshold a set loss allows more than it helped)."""
    return max((h.score for h in hits), default=0.0)


def abstention(hits, threshold: float, retry: str = "pass a lower min_score") -> str | None:
    """Why a ranking is no answer (its best score is below ``threshold``), or None: it answers.

    >>> for part in abstention([], 0.06, "pass --min-score 0").split("; "):
    ...     print(part)
    no tool serves this request well enough (best score 0.000 < min_score 0.060)
    rephrase it, or pass --min-score 0 to see the closest tools
    """
    best = request_score(hits)
    if best >= threshold:
        return None
    return (
        f"no tool serves this request well enough (best score {best:.3f} < min_score {threshold:.3f}); "
        f"rephrase it, or {retry} to see the closest tools"
    )
