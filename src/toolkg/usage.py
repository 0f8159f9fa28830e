"""What the run's LLM-backed work reports, typed: the extractor's usage and the LLM review of inferred edges.

Both land in the run summary's JSON, whose shape readers (benchmarks, scripts) rely on: a figure a job
does not have (the offline extractor makes no HTTP request; no price, no cost) is absent there, not null,
and a job that did not run is ``{}``. ``Sparse`` and ``OrEmpty`` keep those two rules, so the typed
models serialize to exactly the dicts the jobs used to return.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BeforeValidator, SerializerFunctionWrapHandler, WrapSerializer, model_serializer

from toolkg.models import Frozen

M = TypeVar("M")


class Sparse(Frozen):
    """A model whose figures left at None are absent from its dump, not null."""

    @model_serializer(mode="wrap")
    def _drop_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {key: value for key, value in handler(self).items() if value is not None}


def _none_if_empty(value: object) -> object:
    return None if value == {} else value


def _empty_if_none(value: object, handler: SerializerFunctionWrapHandler) -> object:
    return {} if value is None else handler(value)


# A job's figures, or None when it did not run: read from and written as ``{}``.
OrEmpty = Annotated[M | None, BeforeValidator(_none_if_empty), WrapSerializer(_empty_if_none)]


class ExtractionUsage(Sparse):
    """The semantic extractor's usage (``SemanticExtractor.usage``), the summary's ``extraction``. The
    offline extractor fills the first four; the LLM one all, in the order its JSON has always had."""

    extractor: str
    version: str
    model: str | None = None
    prompt: str | None = None  # the prompt's key
    structured_output: str | None = None  # how replies were constrained; "" when every tool came from the cache
    tools: int = 0  # tools extracted
    cache_hits: int = 0
    # the LLM client's counters (toolkg.llm.client.Usage.FIELDS, but cache_hits)
    http_requests: int | None = None
    probes: int | None = None  # the structured-output probe's requests (not among http_requests)
    retries: int | None = None
    reasks: int | None = None
    failed: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None  # when the endpoint's prices are configured
    predicates_mapped: dict[str, int] | None = None  # "said -> ontology term (how)" -> count
    predicates_unmapped: dict[str, int] | None = None  # predicate -> count


class Confirmation(Sparse):
    """An LLM's review of the inferred edges (``flows.stages.infer.confirm_edges``), the summary's
    ``confirmation``: the client's counters, then the verdicts."""

    model: str
    prompt: str
    edges: int = 0  # edges the model judged (cache hits not counted)
    cache_hits: int = 0
    http_requests: int = 0
    probes: int = 0
    retries: int = 0
    reasks: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    confirmed: int = 0
    rejected: int = 0
    unjudged: int = 0
    rejected_edges: tuple[str, ...] = ()  # "consumer <- producer: why", the first 200
