"""What ``toolkg mcp --transport http`` checks before a request reaches the MCP SDK: the Host and Origin
(``toolkg.netpolicy``, as ``toolkg serve`` checks them), then the bearer token (``toolkg.toolsearch.auth``).

Answers follow the MCP specification's authorization section and RFC 6750: no valid token is a 401 with
``WWW-Authenticate: Bearer realm="toolkg"`` (plus ``error="invalid_token"`` when a token was sent and is not
one of the server's); a token whose scope does not allow the request (``call_tool`` with a search-only token)
is a 403 with ``error="insufficient_scope", scope="call"``. Each body is a JSON-RPC error with one line, so an
MCP client shows the reason rather than a bare status.

No ``resource_metadata`` and no ``/.well-known/oauth-protected-resource``: those point a client at the OAuth
authorization server that issues the resource's tokens, and toolkg's tokens are issued by nobody (they are
configured, as a header, in the client). Advertising metadata would send OAuth-capable clients on a sign-in
that cannot succeed instead of telling the user that the header is missing.

Who may call which server's tools is decided again in ``call_tool`` itself (``auth.caller_scope``): the 403
here is the specification's answer for a request the scope rules out whole, read from the request body, and
that reading (a JSON-RPC batch, odd JSON) is not what the refusal depends on.

A POST's body is read whole here, after the token and before the SDK: a body the client abandons, or is cut
for sending too slowly (``uvicorn_limits``), goes no further, and is never passed on as if it were whole.
"""

from __future__ import annotations

import json
import re

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from starlette.authentication import AuthCredentials
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolkg.netpolicy import HostPolicy
from toolkg.toolsearch.auth import Token, Tokens, caller_scope

REALM = 'Bearer realm="toolkg"'
_BEARER = re.compile(r"bearer +(\S+) *", re.IGNORECASE)
_UNAUTHORIZED = -32001  # JSON-RPC's range for server-defined errors
NEEDS_TOKEN = (
    "this server needs a bearer token: send the header 'Authorization: Bearer TOKEN' (whoever runs toolkg mcp "
    "has it: toolkg mcp --show-token)"
)
WRONG_TOKEN = "the bearer token sent is not one of this server's (send 'Authorization: Bearer TOKEN')"


class McpHttpGate:
    """An ASGI middleware: a request past it names this server, and carries a token (unless ``tokens`` is None,
    i.e. --no-auth), whose scope it then runs under."""

    def __init__(self, app: ASGIApp, hosts: HostPolicy, tokens: Tokens | None) -> None:
        self.app = app
        self.hosts = hosts
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan
            return await self.app(scope, receive, send)
        headers = Headers(scope=scope)
        if reason := self.hosts.refusal(headers.getlist("host"), headers.getlist("origin")):
            return await _answer(send, 403, {"content-type": "text/plain; charset=utf-8"}, reason.encode() + b"\n")
        token: Token | None = None
        if self.tokens is not None:
            found = self._bearer(headers.getlist("authorization"))
            if not isinstance(found, Token):
                challenge = REALM if found is None else f'{REALM}, error="invalid_token"'
                return await _refuse(send, 401, challenge, NEEDS_TOKEN if found is None else WRONG_TOKEN)
            token = found
            access = AccessToken(token=token.name, client_id=token.principal, scopes=[str(token.scope)])
            scope["user"] = AuthenticatedUser(access)  # the SDK binds each session to the token that opened it
            scope["auth"] = AuthCredentials(access.scopes)
        if scope["method"] == "POST":
            # The body is read whole before the SDK sees the request: a client that goes away mid-body (or is
            # cut for sending it too slowly, uvicorn_limits) ends here; in the SDK each one was a logged
            # traceback, and 32 of them held the event loop for 6 s.
            buffered = await _buffered(receive)
            if buffered is None:
                return None
            body, receive = buffered
            if token is not None and not token.scope.calls and _calls_call_tool(body):
                reason = token.scope.call_refusal("", "")
                assert reason is not None, "a scope without calls refuses every call"
                challenge = f'{REALM}, error="insufficient_scope", scope="call", error_description="{reason}"'
                return await _refuse(send, 403, challenge, reason)
        if token is None:  # --no-auth
            return await self.app(scope, receive, send)
        marker = caller_scope.set(token.scope)
        try:
            await self.app(scope, receive, send)
        finally:
            caller_scope.reset(marker)

    def _bearer(self, values: list[str]) -> Token | bool | None:
        """The token's entry; None without a bearer credential; False for one that is malformed (two headers,
        two tokens) or matches no entry."""
        if not any(value[:6].lower() == "bearer" for value in values):
            return None
        found = _BEARER.fullmatch(values[0]) if len(values) == 1 else None
        assert self.tokens is not None, "asked only when the server has tokens"
        return (found is not None and self.tokens.match(found.group(1))) or False


def _calls_call_tool(body: bytes) -> bool:
    """Whether a JSON-RPC message (or batch) in ``body`` is a tools/call of call_tool."""
    try:
        message = json.loads(body)
    except ValueError:
        return False
    for item in message if isinstance(message, list) else [message]:
        if isinstance(item, dict) and item.get("method") == "tools/call":
            params = item.get("params")
            if isinstance(params, dict) and params.get("name") == "call_tool":
                return True
    return False


async def _buffered(receive: Receive, limit: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> tuple[bytes, Receive] | None:
    """The request body read (up to ``limit``: the SDK refuses more), and a ``receive`` that replays it; None
    if the client disconnected before it was whole (a part of a body is never passed on as the whole)."""
    chunks, size, more = [], 0, True
    while more and size <= limit:
        message = await receive()
        if message["type"] != "http.request":  # http.disconnect
            return None
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        more = message.get("more_body", False)
    body = b"".join(chunks)
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": more}]

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return body, replay


async def _refuse(send: Send, status: int, challenge: str, reason: str) -> None:
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": _UNAUTHORIZED, "message": reason}}
    headers = {"content-type": "application/json", "www-authenticate": challenge}
    await _answer(send, status, headers, json.dumps(error).encode())


async def _answer(send: Send, status: int, headers: dict[str, str], body: bytes) -> None:
    raw = [(k.encode(), v.encode()) for k, v in {**headers, "content-length": str(len(body))}.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
