"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

The real openai + instructor client talks to it over real HTTP. ``script`` decides each
reply from (request body, request number); the default answers every tool-call request
with a valid extraction for the tool named in the prompt. Every request is recorded with
its arrival time and headers.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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
    function = request["tools"][0]["function"]["name"]
    arguments = triples if isinstance(triples, str) else json.dumps({"triples": triples})
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request["model"],
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": function, "arguments": arguments}}
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


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
    def __init__(self, script: Callable[[dict, int], Reply] = always_valid) -> None:
        self.script = script
        self.requests: list[Seen] = []
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
                with fake._lock:
                    fake.requests.append(Seen(time.monotonic(), body, {k.lower(): v for k, v in self.headers.items()}))
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

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
