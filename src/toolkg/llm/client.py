"""One OpenAI-compatible client for every LLM job (extraction, dependency confirmation).

``LLMClient.ask`` is one structured call (instructor) with the behaviour every job needs:

- the structured output is the one the server honours, found by a probe before the client's
  first request (``toolkg.llm.probe``: JSON-schema constrained decoding when offered, else a tool
  call, else JSON mode, else JSON read from the reply's text); in JSON-schema mode a response model
  may offer a tighter schema for the decoder (``for_constrained_decoding``); a run whose answers all
  come from the cache asks nothing, the probe included; a reply cut off at the token limit is a
  failure, not a re-ask;

- a reply that fails validation is re-asked by instructor with the validation message
  (``max_reasks``); still invalid -> an ``LLMFailure`` carrying the raw reply;
- 429 honours ``Retry-After`` (capped by ``max_wait``), 5xx, timeouts and connection errors
  back off exponentially (``max_retries``); still failing -> an ``LLMFailure``;
- 401/403/404 mean the configuration is wrong for every item: ``ConfigError`` stops the run;
- after ``breaker`` consecutive unreachable-endpoint failures, ``tripped()`` tells callers to
  skip the rest instead of each waiting out its retries;
- requests are paced (``requests_per_minute``) in an httpx hook, so re-asks are paced too;
  ``map`` runs items on a bounded thread pool (``max_concurrency``) with progress.
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
import instructor
import openai
from instructor.core.exceptions import IncompleteOutputException, InstructorRetryException
from pydantic import ValidationError

from toolkg import progress
from toolkg.errors import ConfigError
from toolkg.llm.config import LLMConfig
from toolkg.llm.probe import Probe, probe

T = TypeVar("T")
R = TypeVar("R")

_FATAL = (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError)
_RAW_LIMIT = 4000


def _one_line(text: object, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _api_error(exc: BaseException | None) -> openai.APIError | None:
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


def _still_invalid(exc: InstructorRetryException | openai.APIError) -> str:
    """Why the model's last reply was refused, in a line: the first validation errors with where they are
    ("triples.3: hasEntity goes from Tool to BusinessObject; ..."), not instructor's dump of every attempt
    (which, cut to a line, said only "<failed_attempts> <generation number="1"> <excep")."""
    attempts = getattr(exc, "failed_attempts", None) or []
    error = attempts[-1].exception if attempts else exc
    if not isinstance(error, ValidationError):
        return _one_line(error)
    errors = error.errors(include_url=False)
    parts = [f"{'.'.join(map(str, e['loc'])) or 'reply'}: {e['msg'].removeprefix('Value error, ')}" for e in errors[:2]]
    more = f" (and {len(errors) - 2} more)" if len(errors) > 2 else ""
    return _one_line("; ".join(parts) + more)


def _raw_reply(exc: InstructorRetryException | IncompleteOutputException) -> str:
    completion: Any = getattr(exc, "last_completion", None)  # whatever the provider replied, or None: read warily
    try:
        message = completion.choices[0].message
        if message.tool_calls:
            return message.tool_calls[0].function.arguments[:_RAW_LIMIT]
        return (message.content or "")[:_RAW_LIMIT]
    except (AttributeError, IndexError, TypeError):
        return ""


class Usage:
    """Counters of one job's LLM work (the client's own, then the job's ``extra``); thread-safe."""

    # probes: the structured-output probe's requests (not in http_requests; their tokens are in the token counts)
    FIELDS = (
        "cache_hits",
        "http_requests",
        "probes",
        "retries",
        "reasks",
        "failed",
        "prompt_tokens",
        "completion_tokens",
    )

    def __init__(self, *extra: str) -> None:
        self._lock = threading.Lock()
        self.counts = dict.fromkeys((*extra, *self.FIELDS), 0)

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


@dataclass(frozen=True)
class LLMFailure:
    reason: str  # one line
    raw: str = ""  # the reply (or error body) that failed, for the quarantine file


class LLMClient:
    """instructor over openai with our retries, pacing, breaker and usage counters."""

    def __init__(self, config: LLMConfig, counters: Sequence[str] = ()) -> None:
        self.config = config.require_endpoint()
        self.model = config.model
        self.counters = Usage(*counters)
        self._pacer = _Pacer(config.requests_per_minute)
        self._failures_in_a_row = 0
        self._last_failure = ""
        self._stopping = threading.Event()  # set when ``map`` is interrupted: no new attempts, no waits
        self._lock = threading.Lock()
        self._probe_lock = threading.Lock()
        self._thread = threading.local()  # .probing: the request hook counts a probe, not an HTTP request
        self.probe: Probe | None = None
        self._structured: Any = None  # the instructor client for the probed mode
        http_client = openai.DefaultHttpxClient(
            event_hooks={"request": [self._on_request], "response": [self._on_response]}
        )
        self.openai = openai.OpenAI(
            base_url=config.base_url,
            api_key=config.api_key.get_secret_value() or "unused",  # local servers want no key; openai wants one
            timeout=config.timeout,
            max_retries=0,  # retries are ours: Retry-After, backoff and the breaker are counted and bounded
            http_client=http_client,
        )

    def cost(self) -> float | None:
        return self.config.cost(self.counters.counts["prompt_tokens"], self.counters.counts["completion_tokens"])

    # --- HTTP hooks ---------------------------------------------------------------------------

    def _on_request(self, request: httpx.Request) -> None:
        self._pacer.wait()
        if getattr(self._thread, "probing", False):
            self.counters.add(probes=1)
        else:
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

    # --- calls --------------------------------------------------------------------------------

    @property
    def structured_output(self) -> str:
        """The structured output in use ("json_schema", "tools", ...), "" before anything was asked."""
        return self.probe.name if self.probe else ""

    def _client(self) -> Any:
        """The instructor client for the structured output this endpoint honours, probed on first use
        (once per client: the other threads wait for it). Raises ``openai.APIError`` when the endpoint
        cannot be asked, for ``ask`` to retry or report; the next call probes again."""
        with self._probe_lock:
            if self._structured is None:
                self._thread.probing = True
                try:
                    found = probe(self.openai, self.model)
                finally:
                    self._thread.probing = False
                client = instructor.from_openai(self.openai, mode=found.mode)
                client.on("parse:error", lambda *_: self.counters.add(reasks=1))
                self.probe, self._structured = found, client
            return self._structured

    def tripped(self) -> str | None:
        """Why the remaining items should be skipped (the endpoint keeps failing), or None."""
        with self._lock:
            if self._failures_in_a_row >= self.config.breaker:
                return (
                    f"skipped: the LLM endpoint failed {self._failures_in_a_row} times in a row "
                    f"(last: {self._last_failure})"
                )
        return None

    def map(self, work: Callable[[T], R], items: Sequence[T], label: str, unit: str) -> list[R]:
        """``work`` over ``items`` on ``max_concurrency`` threads; results in order, with progress."""
        results: list[Any] = [None] * len(items)
        if not items:
            return results
        pool = ThreadPoolExecutor(self.config.max_concurrency, thread_name_prefix="toolkg-llm")
        interrupted = False
        try:
            futures = {pool.submit(work, item): position for position, item in enumerate(items)}
            for done, future in enumerate(as_completed(futures), start=1):
                results[futures[future]] = future.result()
                progress.report(label, done, len(items), unit=unit)
        except BaseException:
            # Interrupted (SIGTERM, which Prefect turns into an exception here, or Ctrl-C): the requests in flight
            # are not waited for, or the process would outlive the signal by as long as the slowest reply takes
            # (44 s against a slow model). The workers make no further attempt; the items they held go unasked.
            interrupted = True
            self._stopping.set()
            raise
        finally:
            pool.shutdown(wait=not interrupted, cancel_futures=True)
        return results

    def ask(
        self,
        messages: list[dict],
        response_model: type[T],
        context: dict | None = None,
        decoding_model: type[T] | None = None,
    ) -> T | LLMFailure:
        """One validated structured reply, or why there is none. Raises ConfigError on 401/403/404.
        ``decoding_model`` replaces ``response_model`` (and its ``for_constrained_decoding``) when the server
        constrains decoding to a JSON schema: a schema made for this one request."""
        for attempt in range(self.config.max_retries + 1):
            if self._stopping.is_set():
                return LLMFailure("not asked: the run was interrupted")
            try:
                client = self._client()
                model = response_model
                if self.probe is not None and self.probe.name == "json_schema":  # a schema made for the decoder
                    model = decoding_model or getattr(response_model, "for_constrained_decoding", None) or model
                reply = client.chat.completions.create(
                    model=self.model,
                    messages=messages,
                    response_model=model,
                    max_retries=self.config.max_reasks,
                    temperature=self.config.temperature,
                    context=context or {},
                    **({"max_tokens": self.config.max_tokens} if self.config.max_tokens else {}),
                )
                with self._lock:
                    self._failures_in_a_row = 0
                return reply
            except IncompleteOutputException as exc:  # the model wrote until the token limit: re-asking will not help
                with self._lock:
                    self._failures_in_a_row = 0  # the endpoint answered
                limit = f"max_tokens {self.config.max_tokens}" if self.config.max_tokens else "the server's limit"
                return LLMFailure(f"LLM reply cut off at {limit} (finish_reason length)", _raw_reply(exc))
            except (InstructorRetryException, openai.APIError) as exc:
                error = _api_error(exc)
                if error is None:  # the model kept breaking the schema
                    attempts = getattr(exc, "n_attempts", self.config.max_reasks + 1)
                    return LLMFailure(
                        f"LLM reply still invalid after {attempts} attempts: {_still_invalid(exc)}",
                        _raw_reply(exc) if isinstance(exc, InstructorRetryException) else "",
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
                return LLMFailure(reason, _body(error))
            if attempt == self.config.max_retries:
                with self._lock:
                    self._failures_in_a_row += 1
                    self._last_failure = reason
                return LLMFailure(f"{reason} (gave up after {attempt + 1} attempts)", _body(error))
            wait = _retry_after(error)
            if wait is None:
                wait = min(self.config.max_wait, 0.5 * 2**attempt) * (1 + random.random() / 4)
            self.counters.add(retries=1)
            self._stopping.wait(min(wait, self.config.max_wait))
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
