"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

The real openai + instructor client talks to it over real HTTP. ``script`` decides each
reply from (request body, request number); the default answers every tool-call request
with a valid extraction for the tool named in the prompt. Every request is recorded with
its arrival time and headers.

The client's structured-output probes (``toolkg.llm.probe``, recognised by ``PROBE_MARKER``) are
answered apart, recorded in ``probes`` (not ``requests``, not numbered, not scripted): the fake
honours the structured outputs in ``offers`` (by default tool calls only, so a client probes its
way to tool-call mode as before) and refuses the others with a 400; ``probe_script`` replaces
those answers (a server that accepts a field and ignores it, one that is down...). A request
without ``tools`` gets its reply in the message's content (fenced as Markdown when it has no
``response_format`` either, as instructor's MD_JSON mode asks).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from toolkg.llm.probe import PROBE_FIELD, PROBE_MARKER, PROBE_VALUE


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict -> JSON; str -> sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def tool_in_prompt(request: dict) -> dict:
    """The tool document the extraction prompt embeds (the first JSON object in the user message)."""
    user = [m for m in request["messages"] if m["role"] == "user"][0]["content"]
    return json.JSONDecoder().raw_decode(user[user.index("{") :])[0]


def valid_triples(request: dict) -> list[dict]:
    tool = tool_in_prompt(request)
    triples = [
        {
            "head": tool["name"],
            "head_type": "Tool",
            "relation": "hasEntity",
            "tail": "Widgets",
            "tail_type": "BusinessObject",
        },
        {
            "head": tool["name"],
            "head_type": "Tool",
            "relation": "hasCapability",
            "tail": "read",
            "tail_type": "Capability",
        },
        {"head": tool["name"], "head_type": "Tool", "relation": "usedBy", "tail": "Sales", "tail_type": "Department"},
    ]
    for parameter in tool["parameters"][:1]:
        triples.append(
            {
                "head": parameter["name"],
                "head_type": "Parameter",
                "relation": "refersTo",
                "tail": "widget",
                "tail_type": "BusinessObject",
            }
        )
    return triples


def invalid_triples(request: dict) -> list[dict]:
    """Breaks the ontology: hasEntity must point at a BusinessObject, not a Department."""
    tool = tool_in_prompt(request)
    return [
        {"head": tool["name"], "head_type": "Tool", "relation": "hasEntity", "tail": "Sales", "tail_type": "Department"}
    ]


def completion(request: dict, triples: list[dict] | str) -> dict:
    """A reply carrying ``triples`` (or a raw JSON string) the way the request asked: a tool call when it
    offered tools, else the message's content."""
    arguments = triples if isinstance(triples, str) else json.dumps(laid_out(request, triples))
    if not request.get("tools"):
        fenced = "response_format" not in request
        return text_completion(request, f"```json\n{arguments}\n```" if fenced else arguments)
    function = request["tools"][0]["function"]["name"]
    call = {"id": "call_1", "type": "function", "function": {"name": function, "arguments": arguments}}
    return _envelope(request, {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls")


def laid_out(request: dict, triples: list[dict]) -> dict:
    """``triples`` as the request's JSON schema lays them out, as a server decoding to that schema would write
    them: the tool-centred lists (a name list per relation from the tool, {parameter, entity, entity_type}
    per relation from a parameter) when the schema has them, else one triple list."""
    wanted = ((request.get("response_format") or {}).get("json_schema") or {}).get("schema", {}).get("properties", {})
    if set(wanted) <= {"triples"}:
        return {"triples": triples}
    reply: dict = {name: [] for name in wanted}
    for t in triples:
        if t["head_type"] == "Tool" and t["relation"] in wanted:
            reply[t["relation"]].append(t["tail"])
        elif t["head_type"] == "Parameter" and t["relation"] in wanted:
            reply[t["relation"]].append({"parameter": t["head"], "entity": t["tail"], "entity_type": t["tail_type"]})
        else:
            reply["triples"].append(t)
    return reply


def text_completion(request: dict, content: str, finish_reason: str = "stop", usage: dict | None = None) -> dict:
    return _envelope(request, {"role": "assistant", "content": content}, finish_reason, usage)


def _envelope(request: dict, message: dict, finish_reason: str, usage: dict | None = None) -> dict:
    """A chat completion carrying one choice, ``message``."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage or {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


def is_probe(request: dict) -> bool:
    return any(PROBE_MARKER in str(m.get("content") or "") for m in request.get("messages", []))


def probe_kind(request: dict) -> str:
    """Which structured output a probe request tries: json_schema, tools or json_object."""
    if request.get("tools"):
        return "tools"
    return (request.get("response_format") or {}).get("type", "")


def honour_probe(request: dict) -> Reply:
    """The reply of a server that does what the probe asks (no usage: the default fake's token counts stay
    the scripted replies' own)."""
    answer = json.dumps({PROBE_FIELD: PROBE_VALUE})
    if probe_kind(request) == "tools":
        body = completion(request, answer)
    else:
        body = text_completion(request, answer)
    body.pop("usage")
    return Reply(body=body)


def embeddings_reply(request: dict) -> dict:
    """Bag-of-words vectors (64 hashed buckets): texts sharing words are close, as with a real model."""
    import hashlib
    import re

    data = []
    for position, text in enumerate(request["input"]):
        vector = [0.0] * 64
        for word in re.findall(r"[a-z]+", text.lower()):
            vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
        data.append({"object": "embedding", "index": position, "embedding": vector})
    return {"object": "list", "data": data, "model": request["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}}


def always_valid(request: dict, n: int) -> Reply:
    return Reply(body=completion(request, valid_triples(request)))


@dataclass
class Seen:
    at: float
    body: dict
    headers: dict[str, str]


class FakeOpenAI:
    def __init__(
        self,
        script: Callable[[dict, int], Reply] = always_valid,
        offers: tuple[str, ...] = ("tools",),
        probe_script: Callable[[dict], Reply] | None = None,
    ) -> None:
        self.script = script
        self.offers = offers
        self.probe_script = probe_script
        self.requests: list[Seen] = []
        self.probes: list[Seen] = []
        self.embedding_requests: list[dict] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                if self.path.endswith("/embeddings"):
                    with fake._lock:
                        fake.embedding_requests.append(body)
                    data = json.dumps(embeddings_reply(body)).encode()
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                seen = Seen(time.monotonic(), body, {k.lower(): v for k, v in self.headers.items()})
                if is_probe(body):
                    with fake._lock:
                        fake.probes.append(seen)
                    reply = fake.answer_probe(body)
                else:
                    with fake._lock:
                        fake.requests.append(seen)
                        n = len(fake.requests)
                    reply = fake.script(body, n)
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body or {})
                data = payload.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def answer_probe(self, request: dict) -> Reply:
        if self.probe_script is not None:
            return self.probe_script(request)
        kind = probe_kind(request)
        if kind in self.offers:
            return honour_probe(request)
        return Reply(status=400, body={"error": {"message": f"this fake does not offer {kind}", "code": 400}})

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
