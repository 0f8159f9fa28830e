"""The LLM extractor: ontology-constrained triples from any OpenAI-compatible endpoint.

One chat completion per tool (the reply is the ontology-generated ``ToolTriples`` model, in
the structured output the server honours: JSON-schema constrained decoding, a tool call, JSON
mode; probed, see ``toolkg.llm.probe``) through ``LLMClient`` (re-asks, Retry-After, backoff,
breaker, pacing: see ``toolkg.llm.client``). The ontology's domain and range rules decide what
is kept whatever the mode: a schema-shaped reply is still validated triple by triple. A reply
still invalid after the re-asks, or an endpoint that keeps failing, quarantines that tool and
the run goes on; 401/403/404 stop the build with one line. Validated results are cached on
disk (``toolkg.llm.cache``): a rerun with unchanged inputs makes no HTTP request.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from toolkg.extractors.triples.models import (
    ExtractionFailure,
    ExtractionProvenance,
    PredicateLog,
    ToolContext,
    ToolExtraction,
    decoding_model,
    input_hash,
    response_model,
    to_extracted,
    tool_document,
)
from toolkg.llm.cache import ExtractionCache, cache_key
from toolkg.llm.client import LLMClient, LLMFailure
from toolkg.llm.config import LLMConfig
from toolkg.models import Server, Tool
from toolkg.ontology import ontology_version
from toolkg.ontology.schema import extraction_schema
from toolkg.prompts import Prompt, load_prompt
from toolkg.text.lexicon import CAPABILITIES
from toolkg.usage import ExtractionUsage

NAME = "llm"
VERSION = "1"


def _render_schema() -> tuple[str, str]:
    schema = extraction_schema()
    types = "\n".join(f"- {name}: {comment}" for name, comment in schema.types.items())
    predicates = "\n".join(
        f"- {p.name}: {' | '.join(sorted(p.domain))} -> {' | '.join(sorted(p.range))}"
        + (f"  ({p.comment})" if p.comment else "")
        for p in schema.predicates.values()
    )
    return types, predicates


class LLMExtractor:
    """Ontology-constrained extraction through an OpenAI-compatible endpoint, cached on disk."""

    name = NAME
    version = VERSION

    def __init__(self, config: LLMConfig, cache_path: str | Path) -> None:
        self.llm = LLMClient(config, counters=("tools",))
        self.model = config.model
        self.prompt: Prompt = load_prompt(config.prompt)
        self.cache = ExtractionCache(config.cache or cache_path)
        self.counters = self.llm.counters
        self.predicates = PredicateLog()
        self._types, self._predicates = _render_schema()

    def key(self) -> str:
        """What the result depends on besides the input (part of every manifest's fingerprint)."""
        return f"{VERSION}/{self.model}/{self.prompt.key}"

    def close(self) -> None:
        self.cache.close()

    def usage(self) -> ExtractionUsage:
        cost = self.llm.cost()
        return ExtractionUsage.model_validate(
            {
                "extractor": NAME,
                "version": VERSION,
                "model": self.model,
                "prompt": self.prompt.key,
                "structured_output": self.llm.structured_output,  # "" when every tool came from the cache
                **self.counters.counts,
                "cost": round(cost, 6) if cost is not None else None,
                "predicates_mapped": dict(self.predicates.mapped),
                "predicates_unmapped": dict(self.predicates.unmapped),
            }
        )

    def extract_many(
        self, items: Sequence[tuple[Tool, Server]], run_id: str
    ) -> list[ToolExtraction | ExtractionFailure]:
        """One result per item, in order; cache hits first, then the misses concurrently."""
        results: list[ToolExtraction | ExtractionFailure | None] = [None] * len(items)
        todo = []
        for position, (tool, server) in enumerate(items):
            document = tool_document(tool, server)
            digest = input_hash(document)
            key = cache_key(self.model, self.prompt.sha256, ontology_version(), digest)
            hit = self.cache.get(key)
            if hit is not None:
                value, first_run = hit
                results[position] = self._extraction(tool, value["triples"], digest, first_run)
                self.counters.add(cache_hits=1)
            else:
                todo.append((position, tool, document, digest, key))
        done = self.llm.map(lambda job: self._extract_one(*job[1:], run_id), todo, "extract (llm)", "tools")
        for job, result in zip(todo, done, strict=True):
            results[job[0]] = result
        return results  # type: ignore[return-value]

    def _extraction(self, tool: Tool, triples: list[dict], digest: str, run_id: str) -> ToolExtraction:
        context = ToolContext(name=tool.name, parameters=tuple(p.name for p in tool.parameters))
        reply = response_model().model_validate({"triples": triples}, context={"tool": context})
        return ToolExtraction(
            tool_id=tool.id,
            triples=to_extracted(reply),
            provenance=ExtractionProvenance(
                extractor=NAME,
                extractor_version=VERSION,
                input_hash=digest,
                model=self.model,
                prompt_id=self.prompt.id,
                prompt_hash=self.prompt.sha256,
                run_id=run_id,
            ),
        )

    def _extract_one(
        self, tool: Tool, document: dict, digest: str, key: str, run_id: str
    ) -> ToolExtraction | ExtractionFailure:
        if reason := self.llm.tripped():
            self.counters.add(failed=1)
            return ExtractionFailure(tool_id=tool.id, reason=reason)
        values = {
            "types": self._types,
            "predicates": self._predicates,
            "capabilities": ", ".join(CAPABILITIES),
            "tool": json.dumps(document, indent=2, ensure_ascii=False),
        }
        # A prompt file of the user's (TOOLKG_LLM_PROMPT) gets the inputs it declares: one written before an
        # input was added still renders, and one that declares an unknown input still fails by name.
        messages = self.prompt.render(**{name: value for name, value in values.items() if name in self.prompt.inputs})
        context = ToolContext(name=tool.name, parameters=tuple(p.name for p in tool.parameters))
        reply = self.llm.ask(
            messages,
            response_model(),
            {"tool": context, "predicates": self.predicates},
            decoding_model=decoding_model(context.parameters),
        )
        if isinstance(reply, LLMFailure):
            self.counters.add(failed=1)
            return ExtractionFailure(tool_id=tool.id, reason=reply.reason, raw=reply.raw)
        value = {"triples": [t.model_dump() for t in to_extracted(reply)]}
        self.cache.put(
            key,
            value,
            model=self.model,
            prompt_id=self.prompt.id,
            prompt_hash=self.prompt.sha256,
            ontology_version=ontology_version(),
            input_hash=digest,
            run_id=run_id,
        )
        self.counters.add(tools=1)
        return self._extraction(tool, value["triples"], digest, run_id)
