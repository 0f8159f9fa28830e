"""Live MCP sources: client configuration files, registry ``server.json`` entries and server addresses,
read into ``ServerSpec``s (how to start or reach each server).

Formats read (auto-detected by content, like the manifest formats):

- ``{"mcpServers": {NAME: {...}}}``: Claude Desktop, Cursor and Claude Code's ``.mcp.json``;
- ``{"servers": {NAME: {...}}}`` (and ``{"mcp": {"servers": ...}}`` in a settings file): VS Code;
- an MCP Registry ``server.json`` (``packages`` / ``remotes``), bare or as the registry API wraps it
  (``{"server": {...}}``, ``{"servers": [{"server": {...}}]}``);
- addresses on the command line: ``mcp+stdio:COMMAND ARG...``, ``https://HOST/PATH`` (Streamable HTTP),
  ``mcp+sse:URL`` (the older HTTP+SSE transport).

An entry is ``{"command", "args", "env", "cwd"}`` (stdio) or ``{"url", "headers", "type"}`` (HTTP).
``${env:NAME}`` / ``${NAME}`` in a client configuration's value is read from the environment (the user
wrote it); a ``server.json`` (its author's) reads only the variables the user names (``--env NAME``).
VS Code's ``${input:...}`` needs a prompt, so that server is reported as not listable. The values of ``env``
and ``headers`` are used to connect and nowhere else: they are kept out of ``repr`` and of everything
``public`` returns, and blanked out of whatever the server answers (``redaction.py``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import SecretStr

from toolkg.extractors.manifests.formats import server_id_from
from toolkg.live.redaction import redact_path, secret_path_segments, secret_values
from toolkg.models import one_line_text

Transport = Literal["stdio", "http", "sse"]
MAX_CONFIG_BYTES = 4 * 1024 * 1024  # a client configuration is small; a bigger .json is a manifest
_MARKERS = (b'"mcpServers"', b'"servers"', b'"packages"', b'"remotes"', b"server.schema.json")
_VARIABLE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")
_INPUT = re.compile(r"\$\{input:[^}]*\}")
ADDRESS_PREFIXES = ("mcp+stdio:", "mcp+sse:", "mcp+http:", "https://", "http://")


@dataclass(frozen=True)
class ServerSpec:
    """How to reach one server. ``env`` and ``headers`` may hold secrets: never printed nor written."""

    name: str  # the server's key in its configuration: its id in the graph
    source: str  # the configuration file (or "address")
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = field(default=(), repr=False)  # may carry a key, like env
    cwd: str | None = None
    url: str = ""
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    metadata: Mapping[str, str] = field(default_factory=dict)  # server.json: description, version, homepage
    filled: tuple[str, ...] = field(default=(), repr=False)  # values put into the URL from variables: secrets too

    @property
    def id(self) -> str:
        return server_id_from(self.name)

    def secrets(self) -> list[str]:
        """Every value that must not appear in anything written, longest first: env and header values,
        credentials in the URL, secret-looking arguments (``toolkg.live.redaction.secret_values``)."""
        return secret_values(self.env, self.headers, self.url, self.args, filled=self.filled)

    def public(self) -> dict[str, str]:
        """What may be written about how the server was reached: no env, headers, arguments nor query, and no
        path segment that holds a key (``public_url``)."""
        if self.transport == "stdio":
            return {"transport": "stdio", "command": Path(self.command).name}
        return {"transport": self.transport, "url": public_url(self.url, self.secrets())}


@dataclass(frozen=True)
class Unlistable:
    """A configured server toolkg cannot list (no command or URL derivable, an input prompt...)."""

    name: str
    source: str
    reason: str


@dataclass
class LiveSources:
    servers: list[ServerSpec] = field(default_factory=list)
    unlistable: list[Unlistable] = field(default_factory=list)


def public_url(url: str, secrets: Sequence[str] = ()) -> str:
    """``url`` without user info, query or fragment, and with every path segment that holds a key blanked
    (one shaped like a key, one after ``/s/``, ``/key/``, ``/token/``..., or holding one of ``secrets``):
    hosted MCP servers put their keys in the path (``https://host/s/KEY/mcp``).

    >>> public_url("https://u:p@mcp.example.com/s/k3y-value/mcp?api_key=x")
    'https://mcp.example.com/s/[redacted]/mcp'
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, redact_path(parts.path, secrets), "", ""))


def address_name(url: str) -> str:
    """A server's name from its address: the host and the path's segments but those holding a key, so the key
    is not part of the server id (``mcp.example.com-s-mcp`` for ``https://mcp.example.com/s/KEY/mcp``)."""
    parts = urlsplit(url)
    secret = set(secret_path_segments(parts.path))
    kept = [segment for segment in parts.path.split("/") if segment and segment not in secret]
    return "-".join([parts.hostname or "", *kept])


def _http_url(url: str) -> str:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError as exc:
        raise ValueError(f"url is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("url must be an http:// or https:// address")
    return url


def is_address(text: str) -> bool:
    return text.startswith(ADDRESS_PREFIXES)


def parse_address(text: str) -> ServerSpec:
    """A server address from the command line (see the module docstring)."""
    if text.startswith("mcp+stdio:"):
        words = shlex.split(text.removeprefix("mcp+stdio:").removeprefix("//"))
        if not words:
            raise ValueError(f"{text!r}: mcp+stdio: needs a command, e.g. 'mcp+stdio:mcp-server-time'")
        return ServerSpec(
            name=Path(words[0]).name, source="address", transport="stdio", command=words[0], args=tuple(words[1:])
        )
    transport: Transport = "sse" if text.startswith("mcp+sse:") else "http"
    url = text.removeprefix("mcp+sse:").removeprefix("mcp+http:")
    parts = urlsplit(_http_url(url))
    if parts.username or parts.password or parts.query:
        raise ValueError(
            f"{public_url(url)}: credentials in an address would be recorded with the run; "
            "put them in a configuration file's headers instead"
        )
    assert parts.hostname, "_http_url refuses an address without a host"
    return ServerSpec(name=address_name(url), source="address", transport=transport, url=url)


def as_parameter(path: str) -> str | SecretStr:
    """A build input as a Prefect flow parameter: an address holding a key (in its path) as a ``SecretStr``,
    which Prefect stores as ``**********``; anything else as it is. ``from_parameter`` undoes it."""
    if is_address(path):
        url = path.removeprefix("mcp+sse:").removeprefix("mcp+http:")
        if "://" in url and secret_path_segments(urlsplit(url).path):
            return SecretStr(path)
    return path


def from_parameter(value: str | SecretStr) -> str:
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def sniff_config(path: Path) -> Any | None:
    """The parsed document when ``path`` is a live-source file (client configuration or server.json)."""
    try:
        if path.suffix.lower() != ".json" or path.stat().st_size > MAX_CONFIG_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if not any(marker in data for marker in _MARKERS):
        return None
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return document if config_kind(document) else None


def config_kind(document: Any) -> str | None:
    """'client' (mcpServers / servers mapping), 'registry' (server.json) or None."""
    if not isinstance(document, Mapping):
        return None
    if isinstance(document.get("mcpServers"), Mapping) or isinstance(document.get("servers"), Mapping):
        return "client"
    if isinstance(document.get("mcp"), Mapping) and isinstance(document["mcp"].get("servers"), Mapping):
        return "client"
    if "openapi" in document or "swagger" in document:  # OpenAPI has a "servers" list of its own
        return None
    entry = document.get("server") if isinstance(document.get("server"), Mapping) else document
    if _registry_entry(entry):
        return "registry"
    listed = document.get("servers")  # the registry API's list: [{"server": {...}, "_meta": {...}}]
    if (
        isinstance(listed, list)
        and listed
        and all(isinstance(s, Mapping) and _registry_entry(s.get("server")) for s in listed)
    ):
        return "registry"
    return None


def _registry_entry(entry: Any) -> bool:
    """A server.json: named, with packages or remotes (or its schema says so)."""
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
        return False
    return (
        isinstance(entry.get("packages"), list)
        or isinstance(entry.get("remotes"), list)
        or ("server.schema.json" in str(entry.get("$schema", "")))
    )


def read_config(path: str, document: Any, env_names: Iterable[str] = ()) -> LiveSources:
    """The servers a configuration document names, and the ones that cannot be listed (with why).

    A client configuration is the user's own: its ``${env:NAME}`` are read as it says. A registry
    ``server.json`` is its server's author's: it may name any variable for a header or an environment value,
    so it reads only the variables in ``env_names`` (``--env NAME``, ``live.env``) and otherwise its defaults."""
    found = LiveSources()
    if config_kind(document) == "registry":
        environ = {name: os.environ[name] for name in env_names if name in os.environ}
        listed = document.get("servers") if isinstance(document.get("servers"), list) else [document]
        for entry in listed:
            entry = entry.get("server") if isinstance(entry.get("server"), Mapping) else entry
            name = str(entry.get("name") or "server.json entry")
            _add(found, lambda e=entry: registry_spec(path, e, environ), path, name)
        return found
    for name, entry in _client_block(document).items():
        _add(found, lambda n=name, e=entry: client_spec(path, str(n), e), path, str(name))
    return found


def count_servers(document: Any) -> int:
    """How many servers a configuration document names, read without interpreting any entry (nothing of a
    file that is only reported, never listed, is expanded: no environment variable, no envFile)."""
    if config_kind(document) == "registry":
        return len(document["servers"]) if isinstance(document.get("servers"), list) else 1
    return len(_client_block(document))


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is an object, else an empty one (a field of the wrong kind reads as absent)."""
    return value if isinstance(value, Mapping) else {}


def _client_block(document: Mapping[str, Any]) -> Mapping[str, Any]:
    """A client configuration's servers: ``mcpServers``, ``servers`` or settings.json's ``mcp.servers``."""
    nested = _mapping(document.get("mcp"))
    candidates = (document.get("mcpServers"), document.get("servers"), nested.get("servers"))
    return next((c for c in candidates if isinstance(c, Mapping)), {})


def _add(found: LiveSources, make, source: str, name: str) -> None:
    """One entry read; whatever is wrong with it (a wrong type anywhere) makes that entry alone unlistable."""
    try:
        found.servers.append(make())
    except Exception as exc:  # noqa: BLE001 - a stranger's configuration: one line per bad entry
        reason = str(exc) if isinstance(exc, ValueError) else f"malformed entry ({type(exc).__name__}: {exc})"
        found.unlistable.append(Unlistable(name=name, source=source, reason=one_line_text(reason, 300)))


def _expand(value: Any, what: str, filled: list[str] | None = None) -> str:
    """``value`` with its ``${env:NAME}`` read from the environment (each value read noted in ``filled``)."""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise ValueError(f"{what} must be a string, got {type(value).__name__}")
    text = str(value)
    prompt = _INPUT.search(text)
    if prompt:
        raise ValueError(f"{what} asks for {prompt.group(0)} (a prompt toolkg cannot answer)")

    def lookup(match: re.Match) -> str:
        if match.group(1) not in os.environ:
            raise ValueError(f"{what} needs the environment variable {match.group(1)}, which is not set")
        if filled is not None:
            filled.append(os.environ[match.group(1)])
        return os.environ[match.group(1)]

    return _VARIABLE.sub(lookup, text)


def _strings(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{what} must be an object")
    return {str(k): _expand(v, f"{what}.{k}") for k, v in value.items()}


def client_spec(source: str, name: str, entry: Any) -> ServerSpec:
    """One entry of ``mcpServers`` / ``servers``."""
    if not isinstance(entry, Mapping):
        raise ValueError(f"entry must be an object, got {type(entry).__name__}")
    kind = str(entry.get("type") or entry.get("transport") or "").lower()
    if entry.get("disabled") is True:
        raise ValueError("disabled in the configuration")
    if entry.get("url") or entry.get("serverUrl"):
        filled: list[str] = []
        url = _http_url(_expand(entry.get("url") or entry.get("serverUrl"), "url", filled))
        transport: Transport = "sse" if kind == "sse" or (not kind and url.rstrip("/").endswith("/sse")) else "http"
        headers = _strings(entry.get("headers"), "headers")
        return ServerSpec(name=name, source=source, transport=transport, url=url, headers=headers, filled=tuple(filled))
    if not entry.get("command"):
        raise ValueError("neither a command nor a url")
    args = entry.get("args") or []
    if not isinstance(args, list):
        raise ValueError("args must be a list")
    env = _strings(entry.get("env"), "env")
    if entry.get("envFile"):
        env = _env_file(_expand(entry["envFile"], "envFile"), source) | env
    cwd = _expand(entry["cwd"], "cwd") if entry.get("cwd") else None
    return ServerSpec(
        name=name,
        source=source,
        transport="stdio",
        command=_expand(entry["command"], "command"),
        args=tuple(_expand(a, "args") for a in args),
        cwd=cwd,
        env=env,
    )


def _env_file(path: str, source: str) -> dict[str, str]:
    """A dotenv file (VS Code's envFile): NAME=VALUE lines."""
    target = Path(path) if Path(path).is_absolute() else Path(source).parent / path
    values = {}
    for line in target.read_text(encoding="utf-8").splitlines():
        name, sep, value = line.strip().partition("=")
        if sep and name and not name.startswith("#"):
            values[name.strip()] = value.strip().strip("'\"")
    return values


# --- MCP Registry server.json ---------------------------------------------------------------------

RUNNERS = {"npm": "npx", "pypi": "uvx", "oci": "docker"}


def registry_spec(source: str, entry: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> ServerSpec:
    """A server.json entry: the first package whose runner is on PATH, else the first remote.

    ``environ``: the only environment variables it may read (``read_config``: those the user named); None, none.
    Raises ``ValueError`` saying why when neither gives a command or URL."""
    environ = environ or {}
    name = str(entry.get("name") or "").strip()
    if not name:
        raise ValueError("server.json entry without a name")
    repository = _mapping(entry.get("repository"))
    metadata = {
        key: str(value)
        for key, value in (
            ("title", entry.get("title")),
            ("description", entry.get("description")),
            ("version", entry.get("version")),
            ("homepage", entry.get("websiteUrl") or repository.get("url")),
        )
        if isinstance(value, str) and value.strip()
    }
    short = name.rsplit("/", 1)[-1]
    reasons = []
    for package in entry.get("packages") or ():
        try:
            return ServerSpec(name=short, source=source, metadata=metadata, **_package(package, environ))
        except ValueError as exc:
            reasons.append(str(exc))
    for remote in entry.get("remotes") or ():
        try:
            kind = str(remote.get("type") or "streamable-http")
            filled: list[str] = []
            raw_url = str(remote.get("url") or "")
            url = _http_url(_template(raw_url, remote.get("variables"), "remote url", environ, filled))
            headers = {h["name"]: _registry_value(h, "header", environ) for h in remote.get("headers") or ()}
            transport: Transport = "sse" if kind == "sse" else "http"
            return ServerSpec(
                name=short,
                source=source,
                transport=transport,
                url=url,
                headers={k: v for k, v in headers.items() if v},
                metadata=metadata,
                filled=tuple(filled),
            )
        except ValueError as exc:
            reasons.append(str(exc))
    raise ValueError("not listable: " + ("; ".join(reasons) or "no packages or remotes"))


def _package(package: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    kind, identifier = str(package.get("registryType") or ""), str(package.get("identifier") or "")
    transport = _mapping(package.get("transport"))
    if transport.get("type", "stdio") != "stdio":
        raise ValueError(f"{kind} package {identifier}: {transport.get('type')} transport needs a URL to reach it")
    runner = str(package.get("runtimeHint") or RUNNERS.get(kind, ""))
    if not runner or not identifier:
        raise ValueError(f"{kind or 'a'} package {identifier}: no runner toolkg knows for it")
    if shutil.which(runner) is None:
        raise ValueError(f"{kind} package {identifier} runs with {runner}, which is not on PATH")
    version = str(package.get("version") or "")
    pinned = (
        {"npm": f"{identifier}@{version}", "pypi": f"{identifier}=={version}", "oci": f"{identifier}:{version}"}.get(
            kind, identifier
        )
        if version
        else identifier
    )
    runtime = [_argument(a) for a in package.get("runtimeArguments") or ()]
    if not runtime:
        runtime = {"npx": ["-y"], "docker": ["run", "-i", "--rm"]}.get(runner, [])
    variables = package.get("environmentVariables") or ()
    env = {v["name"]: _registry_value(v, "environment variable", environ) for v in variables}
    args = [*runtime, pinned, *(_argument(a) for a in package.get("packageArguments") or ())]
    return {
        "transport": "stdio",
        "command": runner,
        "args": tuple(a for a in args if a),
        "env": {k: v for k, v in env.items() if v},
    }


def _registry_value(spec: Mapping[str, Any], what: str, environ: Mapping[str, str]) -> str:
    """A header or environment variable of server.json: from the variables the user named, else its
    default/value."""
    name = str(spec.get("name") or "")
    value = environ.get(name) or spec.get("value") or spec.get("default") or ""
    if not value and spec.get("isRequired"):
        raise ValueError(f"needs the {what} {name}: {_name_it(name)}")
    return _template(str(value), spec.get("variables"), f"{what} {name}", environ)


def _name_it(name: str) -> str:
    """How to give a server.json a variable: it reads only those named (the rest of the environment is not its)."""
    return f"set {name} in the environment and name it with --env {name} (a server.json reads no other variable)"


def _argument(argument: Any) -> str:
    if not isinstance(argument, Mapping):
        return str(argument)
    value = str(argument.get("value") or argument.get("default") or "")
    if argument.get("type") == "named":
        return f"{argument.get('name')}={value}" if value else str(argument.get("name") or "")
    if not value and argument.get("isRequired"):
        raise ValueError(f"needs the argument {argument.get('valueHint') or argument.get('name') or '?'}")
    return value


def _template(text: str, variables: Any, what: str, environ: Mapping[str, str], filled: list[str] | None = None) -> str:
    """Fill ``{name}`` placeholders from ``environ`` (the variables the user named) or their defaults; each
    value put in is noted in ``filled`` (a URL's path then keeps it out of everything written)."""
    variables = variables if isinstance(variables, Mapping) else {}

    def fill(match: re.Match) -> str:
        key = match.group(1)
        spec = variables.get(key) if isinstance(variables.get(key), Mapping) else {}
        value = environ.get(key) or spec.get("default")
        if not value:
            raise ValueError(f"{what} needs {{{key}}}: {_name_it(key)}")
        if filled is not None and key in environ:  # the entry's own default is no secret
            filled.append(str(value))
        return str(value)

    return re.sub(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", fill, text)
