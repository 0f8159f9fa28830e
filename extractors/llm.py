"""The LLM extractor: openai + instructor against any OpenAI-compatible endpoint.

One chat completion per tool (tool-call mode: the reply is the ontology-generated
``ToolTriples`` model). Around that call:

- a reply that breaks the ontology is re-asked by instructor with the validation message
  (``max_reasks``); still invalid -> the tool is quarantined with the raw reply;
- 429 honours ``Retry-After`` (capped by ``max_wait``), 5xx, timeouts and connection errors
  back off exponentially (``max_retries``); still failing -> quarantined, the run goes on;
- 401/403/404 mean the configuration is wrong for every tool: the build stops with one line;
- after ``breaker`` consecutive unreachable-endpoint failures the remaining tools are
  quarantined at once instead of each waiting out its retries;
- requests are bounded (``max_concurrency`` threads) and paced (``requests_per_minute``);
- validated results are cached on disk (``llm_cache``): a rerun with unchanged inputs makes
  no HTTP request.
"""

from __future__ import annotations

import email.utils
import json
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import httpx
import instructor
import openai
from instructor.core.exceptions import InstructorRetryException

from toolkg import progress
from toolkg.errors import ConfigError
from toolkg.extractors.llm_cache import ExtractionCache, cache_key
from toolkg.extractors.llm_config import LLMConfig
from toolkg.extractors.triples import (
    ExtractionFailure,
    ExtractionProvenance,
    PredicateLog,
    ToolContext,
    ToolExtraction,
    input_hash,
    response_model,
    to_extracted,
    tool_document,
)
from toolkg.models import Server, Tool
from toolkg.ontology import ontology_version
from toolkg.ontology.schema import extraction_schema
from toolkg.prompts import Prompt, load_prompt

NAME = "llm"
VERSION = "1"
_FATAL = (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError)
_RAW_LIMIT = 4000


def _one_line(text: object, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _api_error(exc: BaseException) -> openai.APIError | None:
    """The OpenAI API error behind an instructor exception, if any."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, openai.APIError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _retry_after(error: openai.APIError) -> float | None:
    """Seconds a 429/503 reply asks us to wait (Retry-After: seconds or an HTTP date)."""
    response = getattr(error, "response", None)
    if response is None:
        return None
    if value := response.headers.get("retry-after-ms"):
        try:
            return float(value) / 1000
        except ValueError:
            pass
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time()) if when else None


def _raw_reply(exc: InstructorRetryException) -> str:
    completion = getattr(exc, "last_completion", None)
    try:
        message = completion.choices[0].message
        if message.tool_calls:
            return message.tool_calls[0].function.arguments[:_RAW_LIMIT]
        return (message.content or "")[:_RAW_LIMIT]
    except (AttributeError, IndexError, TypeError):
        return ""


class Usage:
    """Counters of one build's LLM work; updated from worker threads."""

    FIELDS = (
        "tools",
        "cache_hits",
        "http_requests",
        "retries",
        "reasks",
        "failed",
        "prompt_tokens",
        "completion_tokens",
    )

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts = dict.fromkeys(self.FIELDS, 0)

    def add(self, **deltas: int) -> None:
        with self._lock:
            for name, delta in deltas.items():
                self.counts[name] += delta


class _Pacer:
    """Spaces request starts ``60 / rpm`` seconds apart across threads (0 = no limit)."""

    def __init__(self, requests_per_minute: float) -> None:
        self.interval = 60.0 / requests_per_minute if requests_per_minute else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            time.sleep(start - now)


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
        self.config = config.require_endpoint()
        self.model = config.model
        self.prompt: Prompt = load_prompt(config.prompt)
        self.cache = ExtractionCache(config.cache or cache_path)
        self.counters = Usage()
        self.predicates = PredicateLog()
        self._pacer = _Pacer(config.requests_per_minute)
        self._failures_in_a_row = 0
        self._last_failure = ""
        self._lock = threading.Lock()
        self._types, self._predicates = _render_schema()
        http_client = openai.DefaultHttpxClient(
            event_hooks={"request": [self._on_request], "response": [self._on_response]}
        )
        client = openai.OpenAI(
            base_url=config.base_url,
            api_key=config.api_key.get_secret_value() or "unused",  # local servers want no key; openai wants one
            timeout=config.timeout,
            max_retries=0,  # retries are ours: Retry-After, backoff and the breaker are counted and bounded
            http_client=http_client,
        )
        self.client = instructor.from_openai(client, mode=instructor.Mode.TOOLS)
        self.client.on("parse:error", lambda *_: self.counters.add(reasks=1))

    def key(self) -> str:
        """What the result depends on besides the input (part of every manifest's fingerprint)."""
        return f"{VERSION}/{self.model}/{self.prompt.key}"

    def close(self) -> None:
        self.cache.close()

    def usage(self) -> dict[str, object]:
        counts = self.counters.counts
        cost = self.config.cost(counts["prompt_tokens"], counts["completion_tokens"])
        return {
            "extractor": NAME,
            "version": VERSION,
            "model": self.model,
            "prompt": self.prompt.key,
            **counts,
            **({"cost": round(cost, 6)} if cost is not None else {}),
            "predicates_mapped": dict(self.predicates.mapped),
            "predicates_unmapped": dict(self.predicates.unmapped),
        }

    # --- HTTP hooks ---------------------------------------------------------------------------

    def _on_request(self, request: httpx.Request) -> None:
        self._pacer.wait()
        self.counters.add(http_requests=1)

    def _on_response(self, response: httpx.Response) -> None:
        if response.status_code != 200:
            return
        response.read()
        try:
            usage = response.json().get("usage") or {}
            self.counters.add(
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
            )
        except (ValueError, AttributeError, TypeError):
            pass  # a garbage body is instructor's to report

    # --- extraction ---------------------------------------------------------------------------

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
        if todo:
            self._run_concurrently(todo, run_id, results)
        return results  # type: ignore[return-value]

    def _run_concurrently(self, todo: list, run_id: str, results: list) -> None:
        pool = ThreadPoolExecutor(self.config.max_concurrency, thread_name_prefix="toolkg-llm")
        try:
            futures = {pool.submit(self._extract_one, *args[1:], run_id): args[0] for args in todo}
            for done, future in enumerate(as_completed(futures), start=1):
                results[futures[future]] = future.result()
                progress.report("extract (llm)", done, len(todo), unit="tools")
        finally:
            pool.shutdown(cancel_futures=True)

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
        with self._lock:
            if self._failures_in_a_row >= self.config.breaker:
                self.counters.add(failed=1)
                return ExtractionFailure(
                    tool_id=tool.id,
                    reason=f"skipped: the LLM endpoint failed {self._failures_in_a_row} times in a row "
                    f"(last: {self._last_failure})",
                )
        result = self._call_with_retries(tool, document)
        if isinstance(result, ExtractionFailure):
            self.counters.add(failed=1)
            return result
        value = {"triples": [t.model_dump() for t in to_extracted(result)]}
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

    def _call_with_retries(self, tool: Tool, document: dict):
        messages = self.prompt.render(
            types=self._types,
            predicates=self._predicates,
            tool=json.dumps(document, indent=2, ensure_ascii=False),
        )
        context = ToolContext(name=tool.name, parameters=tuple(p.name for p in tool.parameters))
        for attempt in range(self.config.max_retries + 1):
            try:
                reply = self.client.chat.completions.create(
                    model=self.model,
                    messages=messages,
                    response_model=response_model(),
                    max_retries=self.config.max_reasks,
                    temperature=self.config.temperature,
                    context={"tool": context, "predicates": self.predicates},
                )
                with self._lock:
                    self._failures_in_a_row = 0
                return reply
            except (InstructorRetryException, openai.APIError) as exc:
                error = _api_error(exc)
                if error is None:  # the model kept breaking the ontology
                    attempts = getattr(exc, "n_attempts", self.config.max_reasks + 1)
                    return ExtractionFailure(
                        tool_id=tool.id,
                        reason=f"LLM reply still invalid after {attempts} attempts: {_one_line(exc)}",
                        raw=_raw_reply(exc) if isinstance(exc, InstructorRetryException) else "",
                    )
            if isinstance(error, _FATAL):
                raise ConfigError(
                    f"LLM endpoint refused the request ({error.status_code}): {_server_message(error)}"
                ) from None
            transient = isinstance(error, openai.APIConnectionError | openai.RateLimitError) or (
                isinstance(error, openai.APIStatusError) and error.status_code >= 500
            )
            reason = _describe(error)
            if not transient:
                return ExtractionFailure(tool_id=tool.id, reason=reason, raw=_body(error))
            if attempt == self.config.max_retries:
                with self._lock:
                    self._failures_in_a_row += 1
                    self._last_failure = reason
                return ExtractionFailure(
                    tool_id=tool.id, reason=f"{reason} (gave up after {attempt + 1} attempts)", raw=_body(error)
                )
            wait = _retry_after(error)
            if wait is None:
                wait = min(self.config.max_wait, 0.5 * 2**attempt) * (1 + random.random() / 4)
            self.counters.add(retries=1)
            time.sleep(min(wait, self.config.max_wait))
        raise AssertionError("unreachable")


def _describe(error: openai.APIError) -> str:
    if isinstance(error, openai.APITimeoutError):
        return "LLM request timed out"
    if isinstance(error, openai.APIConnectionError):
        return f"cannot reach the LLM endpoint: {_one_line(error.__cause__ or error, 120)}"
    if isinstance(error, openai.APIStatusError):
        return f"LLM endpoint answered {error.status_code}: {_server_message(error)}"
    return f"LLM error: {_one_line(error)}"


def _server_message(error: openai.APIStatusError) -> str:
    """The server's own message ({"error": {"message": ...}} in OpenAI's format), on one line."""
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return _one_line(body["message"], 200)
    if isinstance(body, str) and body:
        return _one_line(body, 200)
    return _one_line(error.message, 200)


def _body(error: openai.APIError) -> str:
    response = getattr(error, "response", None)
    try:
        return response.text[:_RAW_LIMIT] if response is not None else ""
    except (httpx.ResponseNotRead, UnicodeDecodeError):
        return ""
