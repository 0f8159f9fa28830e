"""Which structured output an OpenAI-compatible server really gives, found by asking it.

Servers differ: llama.cpp's ``llama-server``, vLLM, Ollama and OpenAI constrain decoding to a JSON
schema given as ``response_format``; some servers refuse that field, others accept it and ignore
it; a model without a tool-call template may answer a tool call in prose. A setting the user
must know would be wrong as often as right, so the first request of a run that needs the model
is preceded by small probes, tried in order until one is honoured:

1. ``json_schema``: ``response_format`` with a one-field schema whose only valid value no model
   would write unprompted; honoured when the reply is exactly that object (so a server that
   accepts the field but ignores it is not taken at its word);
2. ``tools``: a forced call of a one-parameter function; honoured when a tool call comes back;
3. ``json_object``: ``response_format`` of type ``json_object``; honoured when the reply is one;
4. otherwise ``md_json``: the schema in the prompt, the JSON read from the reply's text.

Each maps onto an instructor mode. A probe the server refuses (400, 422, or 500: llama.cpp's
answer to a feature it was started without) moves on to the next; rejected credentials, an
unknown model (401/403/404) and an endpoint that is down or busy (429, 502-504, timeouts) are
raised as the ``openai`` errors they are, for the caller's retry, breaker and configuration
handling. Probe requests ask for a few tokens and carry ``PROBE_MARKER`` in their one message
(the tests' fake server recognises them by it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import instructor
import openai
from openai.types.chat import ChatCompletionMessageFunctionToolCall, ChatCompletionMessageParam
from openai.types.shared_params import FunctionDefinition

PROBE_MARKER = "toolkg structured-output probe"
PROBE_FIELD = "toolkg_probe"
PROBE_VALUE = "ready"
PROBE_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {PROBE_FIELD: {"type": "string", "enum": [PROBE_VALUE]}},
    "required": [PROBE_FIELD],
    "additionalProperties": False,
}
_MAX_TOKENS = 48  # the probe object is ~8 tokens; a grammar may allow some whitespace around it

MODES = {
    "json_schema": instructor.Mode.JSON_SCHEMA,
    "tools": instructor.Mode.TOOLS,
    "json_object": instructor.Mode.JSON,
    "md_json": instructor.Mode.MD_JSON,
}


@dataclass(frozen=True)
class Probe:
    """What the server honoured: ``name`` (a key of ``MODES``) and, in one line, why the ones before it failed."""

    name: str
    evidence: str = ""

    @property
    def mode(self) -> instructor.Mode:
        return MODES[self.name]


def _messages(ask: str) -> list[ChatCompletionMessageParam]:
    return [{"role": "user", "content": f"{PROBE_MARKER}: {ask}"}]


def _refused(error: openai.APIStatusError) -> bool:
    """The server answered that it cannot do this (rather than that it is down, busy or misconfigured)."""
    return error.status_code in (400, 422, 500)


def _brief(text: object, limit: int) -> str:
    """``text`` on one line, whitespace runs collapsed, cut to ``limit`` characters: evidence, not a record."""
    return " ".join(str(text).split())[:limit]


def _content(reply) -> str:
    try:
        return reply.choices[0].message.content or ""
    except (AttributeError, IndexError, TypeError):
        return ""


def _json_object(text: str) -> dict | None:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _try_json_schema(client: openai.OpenAI, model: str) -> str | None:
    """None when honoured, else why not (one short phrase)."""
    reply = client.chat.completions.create(
        model=model,
        messages=_messages("say hello."),
        response_format={"type": "json_schema", "json_schema": {"name": PROBE_FIELD, "schema": PROBE_SCHEMA}},
        max_tokens=_MAX_TOKENS,
        temperature=0,
    )
    if _json_object(_content(reply)) == {PROBE_FIELD: PROBE_VALUE}:
        return None
    return f"json_schema accepted but not followed (replied {_content(reply)[:40]!r})"


def _try_tools(client: openai.OpenAI, model: str) -> str | None:
    function: FunctionDefinition = {
        "name": PROBE_FIELD,
        "description": "Report that the probe ran.",
        "parameters": PROBE_SCHEMA,
    }
    reply = client.chat.completions.create(
        model=model,
        messages=_messages(f"call {PROBE_FIELD}."),
        tools=[{"type": "function", "function": function}],
        tool_choice={"type": "function", "function": {"name": PROBE_FIELD}},
        max_tokens=_MAX_TOKENS,
        temperature=0,
    )
    try:
        first = (reply.choices[0].message.tool_calls or [])[0]  # none: IndexError, as for an empty list
        if (
            isinstance(first, ChatCompletionMessageFunctionToolCall)
            and first.function.name == PROBE_FIELD
            and _json_object(first.function.arguments) is not None
        ):
            return None
    except (AttributeError, IndexError, TypeError):
        pass
    return f"tools accepted but no tool call came back (replied {_content(reply)[:40]!r})"


def _try_json_object(client: openai.OpenAI, model: str) -> str | None:
    reply = client.chat.completions.create(
        model=model,
        messages=_messages(f'reply with the JSON object {{"{PROBE_FIELD}": "{PROBE_VALUE}"}}.'),
        response_format={"type": "json_object"},
        max_tokens=_MAX_TOKENS,
        temperature=0,
    )
    if _json_object(_content(reply)) is not None:
        return None
    return f"json_object accepted but the reply was not JSON ({_content(reply)[:40]!r})"


_ORDER = (("json_schema", _try_json_schema), ("tools", _try_tools), ("json_object", _try_json_object))


def probe(client: openai.OpenAI, model: str) -> Probe:
    """The first structured output ``client``'s server honours for ``model`` (see the module's doc).

    Raises ``openai.APIError`` when the server cannot be asked (down, busy, rejecting the key or
    the model): the probe's outcome would say nothing about the server's abilities."""
    why_not: list[str] = []
    for name, attempt in _ORDER:
        try:
            problem = attempt(client, model)
        except openai.APIStatusError as error:
            if not _refused(error):
                raise
            message = error.body.get("message") if isinstance(error.body, dict) else error.message
            problem = f"{name} refused ({error.status_code}: {_brief(message, 80)})"
        except (openai.APIResponseValidationError, ValueError) as error:  # a 200 the client could not read
            problem = f"{name} answered something unreadable ({_brief(error, 60)})"
        if problem is None:
            return Probe(name, "; ".join(why_not))
        why_not.append(problem)
    return Probe("md_json", "; ".join(why_not))
