"""Bearer tokens for ``toolkg mcp --transport http``: where they come from and what each lets a client do.

Over HTTP anything that reaches the port could otherwise open a session and, with ``--allow-call``, call
tools; over stdio the client started the server itself and needs no token. Tokens come from, first found:
``--token-file FILE``; the environment variable ``TOOLKG_MCP_TOKEN`` (one token, scope ``call``); the
per-user file ``<config dir>/mcp-tokens.toml`` (``toolkg.paths.config_dir``: ``~/.config/toolkg``),
created with one generated token on first use. That file lives with the user's settings, not beside a store
(a store is a folder that gets copied, shared and exported) and not in the cache (clearing a cache must not
change the token every client is configured with); it and a ``--token-file`` must be private (mode 0600).

A token file is TOML, a ``[[token]]`` table per client (``name``, ``token``, ``scope``), or one bare token
line (scope ``call``). Scopes narrow what ``--allow-call`` allows, never widen it:

- ``search``: search_tools, get_tool, tool_dependencies and sparql; call_tool is refused;
- ``call``: those, and call_tool on every server the server allows;
- ``call:A,B``: call_tool on the tools of servers A and B only.

>>> Scope.parse("call:alpha, beta").call_refusal("gamma::x", "gamma")
"gamma::x: this client's token may call tools of alpha, beta only, not of 'gamma' (its scope is call:alpha,beta)"
>>> Scope.parse("search").call_refusal("alpha::x", "alpha").startswith("this client's token may search")
True
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import stat
import tomllib
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from toolkg.environment import MCP_TOKEN
from toolkg.errors import ConfigError
from toolkg.extractors.manifests.formats import server_id_from
from toolkg.paths import config_dir, private_folder

TOKEN_FILE_NAME = "mcp-tokens.toml"
MIN_TOKEN_LENGTH = 16
# RFC 6750's b64token: what an Authorization: Bearer header can carry as it is.
_TOKEN = re.compile(r"[A-Za-z0-9._~+/-]+=*")

# The scope of the token the current HTTP request carries (set by toolkg.toolsearch.http_gate; the MCP SDK runs
# a request's handler in the context its message was sent from). Unset over stdio and with --no-auth.
caller_scope: ContextVar[Scope | None] = ContextVar("toolkg_mcp_caller_scope", default=None)

_TEMPLATE = """\
# toolkg mcp's bearer tokens (toolkg mcp --transport http). Keep this file private: mode 0600.
# A client sends one in the header "Authorization: Bearer TOKEN"; `toolkg mcp --show-token` prints the first.
# scope: "call" (search, and call the tools of every server --allow-call allows), "call:SERVER,SERVER" (calls
# to those servers' tools only) or "search" (search, no calls). Give each client a [[token]] of its own, then
# restart toolkg mcp. A new token: python3 -c "import secrets; print(secrets.token_urlsafe(32))"

[[token]]
name = "default"
scope = "call"
token = "{token}"
"""


@dataclass(frozen=True)
class Scope:
    """What a token may do: always search; call tools when ``calls``, of ``servers`` only when it names some."""

    calls: bool
    servers: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, text: str) -> Scope:
        kind, colon, names = text.strip().partition(":")
        if kind == "search" and not colon:
            return cls(calls=False)
        if kind == "call" and not colon:
            return cls(calls=True)
        servers = frozenset(server_id_from(name) for name in names.split(",") if name.strip())
        if kind == "call" and servers:
            return cls(calls=True, servers=servers)
        raise ConfigError(f"a token's scope is search, call or call:SERVER,SERVER..., not {text!r}")

    def __str__(self) -> str:
        if not self.calls:
            return "search"
        return "call" if not self.servers else "call:" + ",".join(sorted(self.servers))

    def call_refusal(self, tool_id: str, server: str) -> str | None:
        """Why this token may not call ``tool_id`` of ``server``, or None."""
        if not self.calls:
            return (
                "this client's token may search but not call tools (its scope is search; a token with scope call "
                "or call:SERVER can call)"
            )
        if self.servers and server not in self.servers:
            allowed = ", ".join(sorted(self.servers))
            return (
                f"{tool_id}: this client's token may call tools of {allowed} only, not of '{server}' "
                f"(its scope is {self})"
            )
        return None


@dataclass(frozen=True)
class Token:
    """One client's token; ``principal`` tells the sessions of different tokens apart (never the secret)."""

    name: str
    scope: Scope
    digest: bytes = field(repr=False)
    principal: str

    @classmethod
    def make(cls, name: str, secret: str, scope: Scope, number: int) -> Token:
        return cls(name, scope, hashlib.sha256(secret.encode()).digest(), f"toolkg-token-{number}:{name}")


@dataclass(frozen=True)
class Tokens:
    """The tokens a server accepts and where they came from (``path`` for a file, else None)."""

    entries: tuple[Token, ...]
    source: str
    path: Path | None = None
    created: bool = False
    first_secret: str = field(default="", repr=False)  # for --show-token only

    def match(self, presented: str) -> Token | None:
        """The entry whose token is ``presented``, compared in constant time: every entry is compared, digests
        of equal length, so neither the time taken nor where it stops tells how much of a token was right."""
        digest = hashlib.sha256(presented.encode("utf-8", "replace")).digest()
        found = None
        for entry in self.entries:
            if hmac.compare_digest(digest, entry.digest) and found is None:
                found = entry
        return found


def default_token_file() -> Path:
    return config_dir() / TOKEN_FILE_NAME


def load_tokens(token_file: str | Path | None = None, environ: Mapping[str, str] = os.environ) -> Tokens:
    """The tokens from ``--token-file``, else ``TOOLKG_MCP_TOKEN``, else the default file (created if missing)."""
    if token_file is not None:
        path = Path(token_file)
        entries, first = read_token_file(path)
        return Tokens(entries, f"the token file {path}", path, first_secret=first)
    if (secret := MCP_TOKEN.raw(environ)) is not None:
        secret = secret.strip()
        _check_secret(secret, MCP_TOKEN.name)
        return Tokens((Token.make("environment", secret, Scope(calls=True), 1),), MCP_TOKEN.name, first_secret=secret)
    path = default_token_file()
    created = create_token_file(path)
    entries, first = read_token_file(path)
    return Tokens(entries, f"the token file {path}", path, created, first)


def create_token_file(path: Path) -> bool:
    """Write ``path`` with one generated token, mode 0600 in a 0700 folder, unless it exists; True if written.

    The content is written to a private scratch file and hard-linked into place, so two servers starting at once
    never read a half-written file and the second keeps the first one's token."""
    if path.exists():
        return False
    private_folder(path.parent)
    scratch = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    descriptor = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            os.fchmod(out.fileno(), 0o600)  # whatever the umask
            out.write(_TEMPLATE.format(token=secrets.token_urlsafe(32)))
            out.flush()
            os.fsync(out.fileno())
        os.link(scratch, path)
        return True
    except FileExistsError:
        return False
    finally:
        scratch.unlink(missing_ok=True)


def read_token_file(path: Path) -> tuple[tuple[Token, ...], str]:
    """The entries of a token file and the first one's secret; a one-line ConfigError for anything wrong."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"no token file {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the token file {path}: {exc}") from None
    if os.name == "posix" and stat.S_IMODE(mode) & 0o077:
        raise ConfigError(f"the token file {path} can be read by other users: chmod 600 {path}")
    bare = text.strip()
    if bare and "\n" not in bare and "=" not in bare.rstrip("=") and not bare.startswith(("[", "#")):
        _check_secret(bare, str(path))
        return (Token.make("default", bare, Scope(calls=True), 1),), bare
    return _table_entries(path, text)


def _table_entries(path: Path, text: str) -> tuple[tuple[Token, ...], str]:
    try:
        tables = tomllib.loads(text).get("token")
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"the token file {path} is not TOML ({exc}) nor one bare token") from None
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise ConfigError(f"the token file {path} has no [[token]] entries (name, token, scope)")
    entries, secrets_seen, names = [], set(), set()
    for number, table in enumerate(tables, 1):
        where = f"{path}: [[token]] #{number}"
        secret, scope, name = table.get("token"), table.get("scope"), table.get("name", f"token-{number}")
        if not isinstance(secret, str) or not isinstance(scope, str) or not isinstance(name, str):
            raise ConfigError(f"{where} needs token and scope, as strings (and may have a name)")
        _check_secret(secret, where)
        if secret in secrets_seen or name in names:
            raise ConfigError(f"{where} repeats an earlier entry's token or name")
        secrets_seen.add(secret)
        names.add(name)
        entries.append(Token.make(name, secret, Scope.parse(scope), number))
    return tuple(entries), tables[0]["token"]


def _check_secret(secret: str, where: str) -> None:
    """A token an HTTP header carries as it is, and too long to guess."""
    if len(secret) < MIN_TOKEN_LENGTH or not _TOKEN.fullmatch(secret):
        raise ConfigError(
            f"{where}: a token must be at least {MIN_TOKEN_LENGTH} characters of letters, digits and -._~+/ "
            '(python3 -c "import secrets; print(secrets.token_urlsafe(32))" makes one)'
        )
