"""Start and stop a real ``llama-server`` (built by ``make llm``, see ``tests.support.llama_cpp``) on 127.0.0.1.

``LlamaServer`` is a context manager: a free port, the pinned model, one thread by default (on two
shared cores, a second thread spin-waits for a partner the scheduler gave away: 55 tokens/s decoding
on one thread against 9 on two, measured here under load) and two slots of 8k tokens (a prompt, two
replies and a re-ask outgrew 4k), ready when ``/health`` says so; its output goes to a log file whose
tail is shown if it fails to start. ``kill()`` stops it the hard way, as a crash would.
``RecordingProxy`` sits in front of it to count requests and the server's own token counts, and to
kill it after a given number of answers.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from tests.support.llama_cpp import MODEL_NAME, model_file, server_binary
from toolkg.llm.probe import PROBE_MARKER

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent() -> None:
    """In the server's process before exec: the kernel kills it when the process that started it dies, however
    that dies (a test run or benchmark stopped by SIGTERM or SIGKILL skips every cleanup, and a server in its
    own session is not in the group a shell kills: one left behind kept decoding a queued request for 40 min)."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    def __init__(
        self, log: Path, *, threads: int = 1, slots: int = 2, context: int = 16384, port: int | None = None
    ) -> None:
        self.log = log
        self.port = port or free_port()
        self.command = [
            str(server_binary()),
            "--model",
            str(model_file()),
            "--alias",
            MODEL_NAME,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--threads",
            str(threads),
            "--threads-http",
            "2",
            "--parallel",
            str(slots),  # each slot gets context / slots tokens: a prompt, its replies and the re-asks must fit
            "--ctx-size",
            str(context),
            "--no-webui",
            "--metrics",
            # No extra weight layouts: on this machine's virtual CPU, which reports AMX, llama.cpp's AMX kernels
            # stop on an illegal instruction (tilezero), and the model's Q4_1 weights gain nothing from repacking.
            "--no-repack",
        ]
        self.process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120.0) -> LlamaServer:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_parent
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.process.returncode}:\n{self.tail()}")
            try:
                if httpx.get(f"{self.root}/health", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama-server not ready after {timeout:.0f} s:\n{self.tail()}")

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would: no goodbye to the clients in flight."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.kill()

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@dataclass
class Exchange:
    """One request the proxy passed on: what was asked, what came back (usage from the server's own body)."""

    path: str
    body: dict
    status: int
    usage: dict = field(default_factory=dict)

    @property
    def completion(self) -> bool:
        """A chat completion the server answered."""
        return self.status == 200 and self.path.endswith("/chat/completions")

    @property
    def probe(self) -> bool:
        return any(PROBE_MARKER in str(m.get("content") or "") for m in self.body.get("messages", []))


class RecordingProxy:
    """A transparent HTTP proxy on 127.0.0.1 in front of ``upstream`` (a server's root, without /v1): every
    request and the server's reply are passed on byte for byte and recorded, so a test can sum the tokens
    the server itself reported and count the requests a build made. ``after(n, action)`` runs ``action``
    once, right after the n-th chat completion answered, probes aside (e.g. killing the server mid-build);
    ``close()`` stops listening, so clients then meet a refused connection as with the server gone."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._trigger: tuple[int, Callable[[], None]] | None = None
        self._http = httpx.Client(timeout=None)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                proxy._forward(self, b"")

            def do_POST(self) -> None:
                proxy._forward(self, self.rfile.read(int(self.headers.get("content-length", 0))))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def after(self, completions: int, action: Callable[[], None]) -> None:
        self._trigger = (completions, action)

    def completions(self) -> list[Exchange]:
        with self._lock:
            return [e for e in self.exchanges if e.completion]

    def _forward(self, handler: BaseHTTPRequestHandler, payload: bytes) -> None:
        headers = {k: v for k, v in handler.headers.items() if k.lower() in ("content-type", "authorization")}
        try:
            reply = self._http.request(handler.command, self.upstream + handler.path, content=payload, headers=headers)
        except httpx.HTTPError:
            handler.close_connection = True  # the server is gone: so is the answer (no status line at all)
            return
        usage: dict = {}
        try:
            parsed = reply.json()
            usage = (parsed.get("usage") or {}) if isinstance(parsed, dict) else {}
        except ValueError:
            pass
        exchange = Exchange(handler.path, json.loads(payload) if payload else {}, reply.status_code, usage)
        with self._lock:
            self.exchanges.append(exchange)
            done = sum(1 for e in self.exchanges if e.completion and not e.probe)
        try:
            handler.send_response(reply.status_code)
            handler.send_header("content-type", reply.headers.get("content-type", "application/json"))
            handler.send_header("content-length", str(len(reply.content)))
            handler.end_headers()
            handler.wfile.write(reply.content)
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        trigger = self._trigger
        if trigger is not None and done >= trigger[0]:
            self._trigger = None
            trigger[1]()

    def tokens(self) -> tuple[int, int]:
        """(prompt, completion) tokens summed over the server's own usage fields."""
        with self._lock:
            return (
                sum(int(e.usage.get("prompt_tokens") or 0) for e in self.exchanges),
                sum(int(e.usage.get("completion_tokens") or 0) for e in self.exchanges),
            )

    def close(self) -> None:
        """Stop listening: new connections are refused (callable from a handler thread, and twice)."""
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> RecordingProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()
        self._http.close()
