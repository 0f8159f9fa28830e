"""``call_tool`` for ``toolkg mcp``: an agent calls a tool it found through the same connection, and toolkg
forwards the call to the server that owns it.

Before anything reaches a server: the policy (calls are off unless ``--allow-call``; ``--allow-call SERVER``
narrows them; a tool annotated ``destructiveHint: true`` needs ``--allow-destructive``), then the arguments
against the tool's input schema. The server is found the way the build listed it: its live snapshot
(``<store>/live/<server>.json``) names the configuration file, which is read again now, so its secrets come
from the user's configuration at call time and are never stored (``--live SOURCE`` supplies or overrides
servers, as ``toolkg build`` takes them). The store's word alone starts nothing: a configuration its snapshot
names is read only when a toolkg build of this user named it (``toolkg.live.named``), else ``--live FILE`` is
asked for; and only a tool the live server listed (in its snapshot) is relayed, never one a catalog file put
under the server's id. The call goes through ``SessionPool`` (``call_pool.py``) and the server's
``CallToolResult`` comes back unchanged.

    from toolkg.toolsearch import ToolSearch
    from toolkg.toolsearch.calls import CallPolicy, ToolCaller

    with ToolSearch("store") as search, ToolCaller(search, CallPolicy.from_flags(["time"])) as caller:
        result = caller.call_sync("time::get_current_time", {"timezone": "Europe/Paris"})
        print(result.structured_content or result.content)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio

from toolkg.errors import NotFoundError, RequestError
from toolkg.extractors.manifests.formats import server_id_from
from toolkg.live.listing import redact
from toolkg.live.named import was_named
from toolkg.live.redaction import MARKER
from toolkg.live.snapshots import read_snapshot, snapshot_dir
from toolkg.live.sources import ServerSpec
from toolkg.models import one_line_text
from toolkg.toolsearch.call_pool import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_IDLE,
    DEFAULT_PER_SERVER,
    CallFailed,
    CallPlan,
    SessionPool,
    wait_for,
)

__all__ = ["CallFailed", "CallPolicy", "CallRefused", "CallSettings", "ToolCaller", "check_arguments"]


class CallRefused(RequestError):
    """The call is not allowed, or cannot be made as asked (one line saying what would allow it)."""


@dataclass(frozen=True)
class CallPolicy:
    """Which calls ``toolkg mcp`` forwards. Off by default; ``servers`` empty with ``enabled`` means every server."""

    enabled: bool = False
    servers: frozenset[str] = frozenset()
    allow_destructive: bool = False

    @classmethod
    def from_flags(cls, allow_call: Sequence[str] | None, allow_destructive: bool = False) -> CallPolicy:
        """``--allow-call`` as argparse gives it: None (absent), ``["*"]`` (bare) or server names."""
        if allow_call is None:
            return cls(allow_destructive=allow_destructive)
        named = frozenset() if "*" in allow_call else frozenset(server_id_from(s) for s in allow_call)
        return cls(enabled=True, servers=named, allow_destructive=allow_destructive)

    def refusal(self, tool_id: str, server: str, annotations: Mapping[str, Any]) -> str | None:
        """Why ``tool_id`` (of ``server``, with these MCP annotations) may not be called, or None."""
        if not self.enabled:
            return (
                f"{tool_id}: calls are off (toolkg mcp was started without --allow-call; --allow-call allows every "
                f"server, --allow-call {server} this one)"
            )
        if self.servers and server not in self.servers:
            allowed = ", ".join(sorted(self.servers))
            return (
                f"{tool_id}: calls to server '{server}' are not allowed (only to {allowed}; "
                f"--allow-call {server} allows it)"
            )
        if annotations.get("destructiveHint") is True and not self.allow_destructive:
            return (
                f"{tool_id}: the tool is annotated destructiveHint: true, and toolkg mcp calls destructive tools only "
                "with --allow-destructive"
            )
        return None

    def describe(self) -> str:
        if not self.enabled:
            return "Calls are off on this server (it was started without --allow-call): this tool only says so."
        servers = "every server's tools" if not self.servers else "tools of " + ", ".join(sorted(self.servers))
        destructive = "" if self.allow_destructive else " except those annotated destructiveHint: true"
        return f"It calls {servers}{destructive}."


@dataclass(frozen=True)
class CallSettings:
    """How calls are made: per-call timeout, idle period before a session closes, concurrent calls per
    server, and the ``--live`` sources that supply or override servers."""

    timeout: float = DEFAULT_CALL_TIMEOUT
    idle: float = DEFAULT_IDLE
    per_server: int = DEFAULT_PER_SERVER
    live: tuple[str, ...] = field(default=())
    env: tuple[str, ...] = field(default=())  # the variables a registry server.json may read (--env NAME)


def check_arguments(tool_id: str, schema: Any, arguments: Mapping[str, Any]) -> None:
    """Raise ``CallRefused`` naming the first argument that does not fit ``schema`` (a JSON Schema).

    A schema that is not valid JSON Schema itself, or refers outside itself, is left to the server to apply."""
    if not isinstance(schema, Mapping) or not schema:
        return
    from jsonschema import exceptions, validators
    from referencing.exceptions import Unresolvable

    try:
        validator_class = validators.validator_for(schema, default=validators.Draft202012Validator)
        validator_class.check_schema(cast(dict, schema))  # its stub asks a dict; any mapping reads alike
        error = exceptions.best_match(validator_class(schema).iter_errors(dict(arguments)))
    except (exceptions.SchemaError, Unresolvable, RecursionError):
        return
    except Exception:  # noqa: BLE001 - a stranger's schema breaking the validator: the server still checks
        return
    if error is None:
        return
    raise CallRefused(f"{tool_id}: {_argument_message(error)}")


def _argument_message(error) -> str:
    """One line naming the argument: "argument 'timezone': 5 is not of type 'string'", "missing required
    argument 'path'"."""
    path = ".".join(str(part) for part in error.absolute_path)
    message = one_line_text(error.message, 200)
    if error.validator == "required":
        missing = message.removesuffix(" is a required property")
        if path:
            return f"missing required field {missing} in argument '{path}'"
        return f"missing required argument {missing}"
    if path:
        return f"argument '{path}': {message}"
    if error.validator in ("additionalProperties", "unevaluatedProperties"):
        return f"unexpected argument: {message}"
    return f"arguments: {message}"


class ServerLocator:
    """How to reach a server id at call time: a ``--live`` source, else what its live snapshot says."""

    def __init__(self, store_dir: Path, live: Iterable[str] = (), env_names: Iterable[str] = ()) -> None:
        from toolkg.live import find_sources

        self.store_dir = store_dir
        self.env_names = tuple(env_names)
        try:
            sources, rest, _ = find_sources(list(live), self.env_names)
        except ValueError as exc:  # a malformed address
            raise CallRefused(f"--live: {exc}") from None
        for path in rest:  # only a file named here starts servers: a folder is not searched for them (issue 40)
            if Path(path).expanduser().is_dir():
                raise CallRefused(f"--live {path}: a folder; name the MCP client configuration or server.json in it")
            raise CallRefused(f"--live {path}: not an MCP client configuration, server.json or server address")
        self.overrides: dict[str, ServerSpec] = {}
        for spec in sources.servers:
            self.overrides.setdefault(spec.id, spec)
        self.unusable = {server_id_from(u.name): u.reason for u in sources.unlistable}

    def locate(self, tool_id: str, server: str, document: Mapping[str, Any] | None) -> ServerSpec:
        """``server``'s spec; ``document`` is its live snapshot (None when there is none)."""
        if server in self.overrides:
            return self.overrides[server]
        source = document.get("source") if document else None
        if not isinstance(source, Mapping):
            reason = self.unusable.get(server)
            if reason:
                raise CallRefused(f"{tool_id}: server '{server}' given with --live cannot be started: {reason}")
            raise CallRefused(
                f"tool {tool_id} has no live server (its catalog was built from files); toolkg mcp calls the tools of "
                "servers a build listed live (an MCP client configuration, a server.json or an address), or given "
                "with --live"
            )
        configuration = str(source.get("configuration") or "")
        if configuration == "address":
            transport, url = source.get("transport"), source.get("url")
            if transport in ("http", "sse") and isinstance(url, str) and MARKER in url:
                raise CallRefused(
                    f"{tool_id}: server '{server}' was listed from an address holding a key, which is not stored "
                    f"({url}); give it to toolkg mcp again: --live URL"
                )
            if transport in ("http", "sse") and isinstance(url, str) and url:
                assert document is not None, "its source was read from it"
                name = str(document.get("server") or server)
                return ServerSpec(name=name, source="address", transport=transport, url=url)
            raise CallRefused(
                f"{tool_id}: server '{server}' was listed from an mcp+stdio: address, whose arguments are not stored; "
                f"give it to toolkg mcp again: --live 'mcp+stdio:{source.get('command') or 'COMMAND'} ...'"
            )
        path = Path(configuration)
        if not was_named(configuration):  # the store's word alone starts nothing (toolkg.live.named)
            raise CallRefused(
                f"{tool_id}: server '{server}' was listed from {configuration}, a configuration no toolkg build of "
                "yours named (the store says so, and a store may be anyone's); give it with --live FILE"
            )
        if not path.is_file():
            raise NotFoundError(
                f"{tool_id}: server '{server}' was listed from {configuration}, which is gone; give its "
                "configuration with --live FILE"
            )
        from toolkg.live import find_sources

        sources, _, _ = find_sources([str(path)], self.env_names)
        for spec in sources.servers:
            if spec.id == server:
                return spec
        for item in sources.unlistable:
            if server_id_from(item.name) == server:
                raise CallRefused(f"{tool_id}: server '{server}' in {path} cannot be started: {item.reason}")
        raise NotFoundError(f"{tool_id}: server '{server}' is no longer in {path} (rebuild, or give it with --live)")


class ToolCaller:
    """``call_tool``'s work: refusals, argument check, the server's spec, and the call through the pool.

    ``call`` from an event loop (``toolkg mcp``), ``call_sync`` from plain code; ``close`` stops every session."""

    def __init__(self, search, policy: CallPolicy | None = None, settings: CallSettings | None = None) -> None:
        self.search = search
        self.policy = policy or CallPolicy()
        self.settings = settings or CallSettings()
        self.locator = (
            ServerLocator(Path(search.store_dir), self.settings.live, self.settings.env)
            if self.policy.enabled
            else None
        )
        self.pool = SessionPool(
            timeout=self.settings.timeout, idle=self.settings.idle, per_server=self.settings.per_server
        )

    def __enter__(self) -> ToolCaller:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.pool.close()

    def plan(self, tool: str, arguments: Mapping[str, Any] | None) -> CallPlan:
        """The checked call (blocking: it reads the store and the configuration), or one-line refusal."""
        if arguments is not None and not isinstance(arguments, Mapping):
            raise CallRefused("arguments must be an object of argument names to values")
        arguments = dict(arguments or {})
        record = self.search.get_tool(tool)  # NotFoundError / RequestError one-liners, relayed
        tool_id, server, name = record["id"], record["server"], record["name"]
        refusal = self.policy.refusal(tool_id, server, record.get("annotations") or {})
        if refusal:
            raise CallRefused(refusal)
        document = read_snapshot(snapshot_dir(self.search.store_dir) / f"{server}.json")
        assert self.locator is not None, "with calls off, the policy refused above"
        spec = self.locator.locate(tool_id, server, document)
        listed = _listed_tool(document, name)
        if not listed:  # a catalog's tool under a live server's id: the server never offered it
            raise CallRefused(
                f"{tool_id}: server '{server}' did not list a tool '{name}' (not in its live listing); toolkg mcp "
                "calls only the tools a live server listed"
            )
        if listed.get("annotations", {}).get("destructiveHint") is True:  # the server's own word counts too
            refusal = self.policy.refusal(tool_id, server, listed["annotations"])
            if refusal:
                raise CallRefused(refusal)
        schema = listed.get("inputSchema") if isinstance(listed.get("inputSchema"), Mapping) else None
        try:
            check_arguments(tool_id, schema or record.get("input_schema"), arguments)
        except CallRefused as refused:
            raise CallRefused(redact(str(refused), spec.secrets())) from None
        return CallPlan(
            tool_id=tool_id,
            spec=spec,
            tool_name=str(listed.get("name") or name),
            arguments=arguments,
            audited=listed or None,  # compared with the server's own listing at call time (call_pool)
        )

    async def call(self, tool: str, arguments: Mapping[str, Any] | None = None):
        """The server's ``CallToolResult`` for ``tool`` with ``arguments``; refusals and failures raise one
        ``ToolkgError`` (one line, the server's secrets blanked)."""

        def plan_and_submit():
            return self.pool.submit(self.plan(tool, arguments))

        future = await anyio.to_thread.run_sync(plan_and_submit)
        return await wait_for(future)

    def call_sync(self, tool: str, arguments: Mapping[str, Any] | None = None):
        return self.pool.submit(self.plan(tool, arguments)).result()


def _listed_tool(document: Mapping[str, Any] | None, name: str) -> dict[str, Any]:
    """The tool as its server listed it (exact name, whole input schema), when its live snapshot has it."""
    tools = document.get("tools") if document else None
    for entry in tools if isinstance(tools, list) else ():
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and entry["name"].strip() == name:
            return entry
    return {}
