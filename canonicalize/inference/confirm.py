"""LLM confirmation of inferred dependencies: each candidate edge is put to the model once.

The offline rules propose; with an LLM configured (``toolkg build --confirm-deps``), every
proposed edge is shown to the model with both tools' documentation (prompt
``prompts/confirm_dependency.md``) and comes back confirmed (basis ``llm``, the model's
confidence, its reason appended to the evidence) or rejected (dropped, counted and listed in
the run summary). An edge the model could not judge (timeouts, garbage, a tripped breaker)
keeps basis ``inferred`` and is reported. Verdicts are cached per pair: the key covers the
model, the prompt, both tools' documentation and the candidate (kind, parameter), so a
rerun asks only about pairs that are new or whose tools changed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from toolkg.llm.cache import ExtractionCache
from toolkg.llm.client import LLMClient, LLMFailure
from toolkg.llm.config import LLMConfig
from toolkg.models import InferredEdge, Tool
from toolkg.ontology.vocabulary import Basis
from toolkg.prompts import PROMPTS_DIR, load_prompt

PROMPT = PROMPTS_DIR / "confirm_dependency.md"


class DependencyVerdict(BaseModel):
    """The model's judgement of one candidate edge."""

    depends: bool = Field(description="true when the consumer needs the producer to run first")
    confidence: float = Field(ge=0, le=1, description="how sure, 0 to 1")
    reason: str = Field(max_length=400, description="one sentence from the tools' documentation")


def tool_card(tool: Tool) -> dict:
    """What the model sees of a tool (and what the cache key hashes)."""
    return {
        "id": tool.id,
        "name": tool.name,
        "description": tool.description,
        "parameters": [{"name": p.name, "required": p.required, "description": p.description} for p in tool.parameters],
        "outputs": [o.name for o in tool.outputs],
    }


@dataclass
class Review:
    """What the model made of the candidates."""

    edges: list[InferredEdge] = field(default_factory=list)  # confirmed (basis llm) + unjudged (basis inferred)
    rejected: list[tuple[InferredEdge, str]] = field(default_factory=list)
    unjudged: list[tuple[InferredEdge, str]] = field(default_factory=list)


class DependencyConfirmer:
    def __init__(self, config: LLMConfig, cache_path: str | Path) -> None:
        self.llm = LLMClient(config, counters=("edges",))
        self.prompt = load_prompt(PROMPT)
        self.cache = ExtractionCache(config.cache or cache_path)
        self.model = config.model

    def close(self) -> None:
        self.cache.close()

    def usage(self) -> dict[str, object]:
        cost = self.llm.cost()
        return {"model": self.model, "prompt": self.prompt.key, **self.llm.counters.counts} | (
            {"cost": round(cost, 6)} if cost is not None else {}
        )

    def review(self, edges: Sequence[InferredEdge], tools: Sequence[Tool], run_id: str) -> Review:
        cards = {t.id: tool_card(t) for t in tools}
        verdicts: list[DependencyVerdict | LLMFailure | None] = [None] * len(edges)
        todo = []
        for position, edge in enumerate(edges):
            key = self._key(edge, cards)
            hit = self.cache.get(key)
            if hit is not None:
                verdicts[position] = DependencyVerdict.model_validate(hit[0])
                self.llm.counters.add(cache_hits=1)
            else:
                todo.append((position, edge, key))
        judged = self.llm.map(lambda job: self._judge(job[1], job[2], cards, run_id), todo, "confirm (llm)", "edges")
        for (position, _, _), judgement in zip(todo, judged, strict=True):
            verdicts[position] = judgement
        review = Review()
        for edge, verdict in zip(edges, verdicts, strict=True):
            assert verdict is not None, "every edge was judged: from the cache or by the LLM"
            if isinstance(verdict, LLMFailure):
                review.edges.append(edge)
                review.unjudged.append((edge, verdict.reason))
            elif verdict.depends:
                review.edges.append(
                    dataclasses.replace(
                        edge,
                        basis=Basis.LLM,
                        confidence=round(verdict.confidence, 2),
                        evidence=f"{edge.evidence}; LLM: {verdict.reason}",
                    )
                )
            else:
                review.rejected.append((edge, verdict.reason))
        return review

    def _key(self, edge: InferredEdge, cards: dict[str, dict]) -> str:
        material = [self.model, self.prompt.sha256, cards[edge.consumer], cards[edge.producer], edge.kind]
        material.append(edge.parameter or "")
        return hashlib.sha256(json.dumps(material, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def _candidate(self, edge: InferredEdge) -> str:
        via = f" through its parameter {edge.parameter!r}" if edge.parameter else ""
        return f"{edge.kind}: the consumer depends on the producer{via}. Rule {edge.rule}: {edge.evidence}"

    def _judge(
        self, edge: InferredEdge, key: str, cards: dict[str, dict], run_id: str
    ) -> DependencyVerdict | LLMFailure:
        if reason := self.llm.tripped():
            self.llm.counters.add(failed=1)
            return LLMFailure(reason)
        messages = self.prompt.render(
            consumer=json.dumps(cards[edge.consumer], indent=2, ensure_ascii=False),
            producer=json.dumps(cards[edge.producer], indent=2, ensure_ascii=False),
            candidate=self._candidate(edge),
        )
        verdict = self.llm.ask(messages, DependencyVerdict)
        if isinstance(verdict, LLMFailure):
            self.llm.counters.add(failed=1)
            return verdict
        self.cache.put(
            key,
            verdict.model_dump(),
            model=self.model,
            prompt_id=self.prompt.id,
            prompt_hash=self.prompt.sha256,
            ontology_version="",
            input_hash=key,
            run_id=run_id,
        )
        self.llm.counters.add(edges=1)
        return verdict
