"""Where toolkg's HTTP servers may listen and which requests they answer: the one policy of ``toolkg serve``
(``toolkg.serve.http_server``, its own selector server) and ``toolkg mcp --transport http``
(``toolkg.toolsearch.uvicorn_limits``, uvicorn). What is decided (the names a server answers to, where a
request ends, how long and how many connections may wait, how big a request head may be, what a refused
connection is told) is decided here, once; both servers apply it through the same code (``HostPolicy.refusal``,
``read_head``, and ``toolkg.admission`` for the waiting connections), each with a thin adapter to its machinery.

**Local** is 127.0.0.1 or ::1, or ``localhost`` when every address it resolves to is one of those two. The rest
of 127.0.0.0/8 is loopback too, but nothing else takes 127.0.0.2 for "this machine" (browsers, clients, the checks
below), and a name that /etc/hosts points elsewhere is not local at all; so binding any other address needs
``--allow-remote``.

**Host and Origin** are checked on every bind, against DNS rebinding: a page on evil.example re-points its own
name at the server's address, and the browser then sends it requests, as same-origin, with ``Host:
evil.example``. So a server answers only the names it is known by: on a local bind the loopback ones (127.0.0.1,
::1, localhost); on another address that address itself (on 0.0.0.0 or ::, every address of the machine plus the
loopback ones); everywhere, the names the admin lists (``--allow-host``). The port is not compared: the name is
what a rebinding page cannot forge, and a proxy or a port mapping may change the port. An ``Origin``, when sent
(browsers send one on cross-site requests), must name one of those hosts too; ``null`` (a sandboxed or local
file's page) never does.

**Framing** (``framing_refusal``): where two readers may disagree on where a request ends, the bytes after it
are another request to one and a body to the other (request smuggling). An attack battery found
``Content-Length: 0, 5``, two Content-Length headers, one with Transfer-Encoding (RFC 9112 6.1, 6.3), a folded
or space-padded header name (``Content-Length : 5``) each gave the body's bytes to the next request. Such a
request is refused and its connection closed; only the header bytes are looked at, as they are.

**Slow clients**: a connection that has not yet sent a whole request (just opened, dripping header lines or a
body, or idle between two requests) costs a file descriptor, so a client that opens them and sends slowly must
not keep them for ever, nor take every descriptor:

- a request must be whole within ``REQUEST_DEADLINE_S`` of the connection opening (or of the previous answer):
  a deadline for the whole request, which a drip of bytes cannot push back (a timeout per read could);
- one client address may keep ``MAX_SLOW_PER_CLIENT`` connections that have waited over ``SLOW_AFTER_S``;
  past that its oldest ones are cut (``beyond_slow_cap``; a newcomer is never refused: on loopback every
  client shares the address);
- all addresses together may keep ``waiting_cap()`` waiting connections; past that the oldest is cut;
- a client that stops reading its answer is cut after ``WRITE_TIMEOUT_S`` (``toolkg serve``: each write of an
  answer's headers, and of its body).

>>> is_local_bind("127.0.0.1"), is_local_bind("::1"), is_local_bind("127.0.0.2"), is_local_bind("0.0.0.0")
(True, True, False, False)
>>> policy = HostPolicy.for_bind("127.0.0.1")
>>> [policy.accepts(h) for h in ("127.0.0.1:7878", "[::1]", "LOCALHOST:80", "evil.example", "127.0.0.2")]
[True, True, True, False, False]
>>> policy.refusal(["127.0.0.1:7878"], ["https://evil.example"])
"cross-site request from 'https://evil.example' refused (an Origin must name this server: 127.0.0.1, ::1, localhost)"
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import TypeVar
from urllib.parse import urlsplit

from toolkg.errors import ConfigError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

LOCAL_ADDRESSES = frozenset({ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")})
LOCAL_NAMES = frozenset({"localhost"})
WILDCARDS = frozenset({ipaddress.ip_address("0.0.0.0"), ipaddress.ip_address("::")})
_NAME = re.compile(r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*")
_PORT = re.compile(r"(:[0-9]{0,5})?")
_QUOTED = 100  # a refused header is quoted up to this many characters


def _address(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def is_local_bind(host: str) -> bool:
    """Whether listening on ``host`` keeps the server to this machine's own clients (see the module's doc)."""
    if host.lower() == "localhost":
        try:
            resolved = {_address(str(info[4][0])) for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)}
        except OSError:
            return False
        return bool(resolved) and resolved <= LOCAL_ADDRESSES
    return _address(host) in LOCAL_ADDRESSES


def split_host(value: str) -> IPAddress | str | None:
    """The host a ``Host`` header value (or an Origin's ``host[:port]``) names: an address, or a name in lower
    case; None when it is not one (an IPv6 address outside brackets, an IPv4 one inside, a user part...).

    >>> split_host("[::1]:7878"), split_host("LocalHost:80"), split_host("::1"), split_host("a@b")
    (IPv6Address('::1'), 'localhost', None, None)
    """
    host: IPAddress | str | None
    if value.startswith("["):
        inside, bracket, port = value[1:].partition("]")
        host = _address(inside) if bracket else None
        if not isinstance(host, ipaddress.IPv6Address):
            return None
    else:
        name, _, rest = value.partition(":")
        port = value[len(name) :]
        if ":" in rest or not _NAME.fullmatch(name.lower()):
            return None
        host = _address(name) or name.lower()
    return host if _PORT.fullmatch(port) else None


def _allowed_host(text: str) -> IPAddress | str:
    """One ``--allow-host`` value: a name or an address (an IPv6 one with or without brackets), no port."""
    host = _address(text.strip("[]")) or (text.lower() if _NAME.fullmatch(text.lower()) else None)
    if host is None:
        raise ConfigError(f"--allow-host takes a host name or an address without a port, not {text!r}")
    return host


def _machine_addresses() -> set[IPAddress]:
    """Every address of this machine's interfaces (what a wildcard bind listens on)."""
    import psutil

    found = set()
    for addresses in psutil.net_if_addrs().values():
        for entry in addresses:
            if entry.family in (socket.AF_INET, socket.AF_INET6) and (address := _address(entry.address)):
                found.add(address)
    return found


def _quoted(value: str) -> str:
    return repr(value if len(value) <= _QUOTED else value[:_QUOTED] + "...")


@dataclass(frozen=True)
class HostPolicy:
    """The hosts one server answers to (see the module's doc); ``refusal`` says why a request is not answered."""

    addresses: frozenset[IPAddress]
    names: frozenset[str]

    @classmethod
    def for_bind(cls, bind_host: str, allowed_hosts: Iterable[str] = ()) -> HostPolicy:
        """The policy of a server bound to ``bind_host`` that also answers to ``allowed_hosts`` (--allow-host)."""
        extra = [_allowed_host(text) for text in allowed_hosts]
        addresses = {host for host in extra if not isinstance(host, str)}
        names = {host for host in extra if isinstance(host, str)}
        bound = _address(bind_host)
        if is_local_bind(bind_host):
            addresses |= LOCAL_ADDRESSES
            names |= LOCAL_NAMES
        elif bound in WILDCARDS:
            addresses |= LOCAL_ADDRESSES | _machine_addresses()
            names |= LOCAL_NAMES
        elif bound is not None:
            addresses.add(bound)
        else:  # a name: it and what it resolves to now
            names.add(bind_host.lower())
            try:
                found = {_address(str(info[4][0])) for info in socket.getaddrinfo(bind_host, None)}
                addresses |= {a for a in found if a is not None}
            except OSError:
                pass  # listening on it fails the same way, and says so
        return cls(frozenset(addresses), frozenset(names))

    def accepts(self, host: str) -> bool:
        """Whether a ``Host`` header value names this server."""
        named = split_host(host.strip())
        return named in self.addresses if not isinstance(named, str) else named in self.names

    def describe(self) -> str:
        ordered = sorted(self.addresses, key=lambda a: (a.version, int(a)))
        return ", ".join([*(str(a) for a in ordered), *sorted(self.names)])

    def refusal(self, hosts: Sequence[str], origins: Sequence[str] = ()) -> str | None:
        """Why a request with these ``Host`` and ``Origin`` header values must be refused, or None.

        A list for each, as the request carried them: two of either is ambiguous, so refused."""
        if len(hosts) != 1:
            return "a request needs exactly one Host header" if hosts else "a request without a Host header is refused"
        if not self.accepts(hosts[0]):
            return (
                f"Host {_quoted(hosts[0])} is not a name of this server (it answers to {self.describe()}; "
                "--allow-host NAME adds one)"
            )
        if not origins:
            return None
        if len(origins) > 1:
            return "cross-site request with several Origin headers refused"
        origin = origins[0].strip()
        if origin == "null":
            return "cross-site request from an opaque origin (null) refused"
        if not self._same_site(origin):
            names = self.describe()
            return f"cross-site request from {_quoted(origin)} refused (an Origin must name this server: {names})"
        return None

    def _same_site(self, origin: str) -> bool:
        try:
            parts = urlsplit(origin)
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or parts.path or parts.query or parts.fragment:
            return False
        return "@" not in parts.netloc and self.accepts(parts.netloc)


def bind_failure(host: str, port: int, error: OSError) -> ConfigError:
    """Why listening on host:port failed, as one line that says what to do (the CLI exits 2 on it).

    >>> import errno
    >>> str(bind_failure("127.0.0.1", 7878, OSError(errno.EADDRINUSE, "Address already in use")))
    'port 7878 on 127.0.0.1 is in use; pick another with --bind 127.0.0.1:PORT'
    >>> str(bind_failure("::1", 80, OSError(errno.EACCES, "Permission denied")))
    'port 80 on ::1 needs privileges this process lacks; pick one above 1023 with --bind [::1]:PORT'
    """
    import errno

    shown = f"[{host}]" if ":" in host else host
    pick = f"--bind {shown}:PORT"
    if error.errno == errno.EADDRINUSE:
        return ConfigError(f"port {port} on {host} is in use; pick another with {pick}")
    if error.errno == errno.EACCES:
        lacks = f"port {port} on {host} needs privileges this process lacks"
        return ConfigError(f"{lacks}; pick one above 1023 with {pick}")
    if error.errno == errno.EADDRNOTAVAIL:
        return ConfigError(f"cannot listen on {host}: it is no address of this machine (--bind HOST:PORT)")
    return ConfigError(f"cannot listen on {shown}:{port}: {error.strerror or error}")


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port, for a server to listen on (as uvicorn binds one: an IPv6 socket for an
    IPv6 address, SO_REUSEADDR so a restart need not wait out TIME_WAIT); a bind that fails is ``bind_failure``'s
    one line. Bound before the server says it is up, so a busy port is said first, and alone."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise bind_failure(host, port, exc) from None
    return sock


# -- framing ------------------------------------------------------------------------------------------------------


def head_end(data: bytes | bytearray) -> int | None:
    """Where the request line and headers end in ``data`` (the body starts there), or None until they do."""
    line_end = data.find(b"\n")
    if line_end < 0:
        return None
    if len(data[:line_end].split()) < 3:  # no HTTP version: an HTTP/0.9-style line, no headers follow
        return line_end + 1
    ends = [i + n for i, n in ((data.find(b"\r\n\r\n"), 4), (data.find(b"\n\n"), 2)) if i >= 0]
    return min(ends) if ends else None


CHUNKED_REFUSED = "send the body with a Content-Length (chunked request bodies are not accepted)"


def framing_refusal(head: bytes | bytearray, *, chunked_allowed: bool = False) -> tuple[HTTPStatus, str] | None:
    """Why the request whose request line and headers are ``head`` must be refused, its connection closed, or
    None: more than one Content-Length, one that is not ASCII digits (Python's ``int`` reads ``²``), one with
    Transfer-Encoding, a folded line or a header name with spaces around it. ``chunked_allowed``: a server
    that reads chunked bodies (uvicorn) takes Transfer-Encoding alone; one that does not (``toolkg serve``)
    answers it 411, since the body it does not read must not be taken for the next request."""
    lengths: list[bytes] = []
    chunked = False
    for line in bytes(head).split(b"\n")[1:]:
        line = line.removesuffix(b"\r")
        if not line:
            continue
        if line[:1] in (b" ", b"\t"):
            return HTTPStatus.BAD_REQUEST, "obsolete line folding in the request headers"
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip(b" \t"):
            return HTTPStatus.BAD_REQUEST, f"malformed header line: {line[:40].decode('latin-1')!r}"
        name = name.lower()
        if name == b"content-length":
            lengths.append(value.strip(b" \t"))
        elif name == b"transfer-encoding":
            chunked = True
    if len(lengths) > 1:
        return HTTPStatus.BAD_REQUEST, "more than one Content-Length header"
    if lengths and not (lengths[0].isdigit() and lengths[0].isascii()):
        return HTTPStatus.BAD_REQUEST, f"bad Content-Length: {lengths[0][:40].decode('latin-1')!r}"
    if chunked and lengths:
        return HTTPStatus.BAD_REQUEST, "both Content-Length and Transfer-Encoding"
    if chunked and not chunked_allowed:
        return HTTPStatus.LENGTH_REQUIRED, CHUNKED_REFUSED
    return None


# The request line and headers. toolkg serve's are bigger: a GET carries the SPARQL query (up to the guard's 64
# KiB, more once URL-encoded) in its URL, and the standard library refuses a line over 64 KiB anyway.
MAX_HEAD_BYTES = 16 * 1024  # toolkg mcp's (h11's default limit, given to it explicitly)
MAX_QUERY_HEAD_BYTES = 128 * 1024  # toolkg serve's


def head_too_large(limit: int) -> str:
    """What a request whose head passes ``limit`` is told (with 431)."""
    return f"request headers over {limit} bytes"


def read_head(
    data: bytes | bytearray, limit: int, *, chunked_allowed: bool = False
) -> int | tuple[HTTPStatus, str] | None:
    """Where the request line and headers at the start of ``data`` end, once they are in and acceptable; None
    while more must come; or why the connection is answered (status, message) and closed: a head past
    ``limit`` bytes (431), or one whose end is ambiguous (``framing_refusal``). Both servers read a request's
    head with it, so they refuse the same ones.

    >>> read_head(b"GET / HTTP/1.1\\r\\nHost: a\\r\\n\\r\\n", 100), read_head(b"GET / HTTP/1.1\\r\\nHost: a", 100)
    (27, None)
    >>> read_head(b"GET / HTTP/1.1\\r\\nX: " + b"a" * 100, 100)
    (<HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE: 431>, 'request headers over 100 bytes')
    """
    end = head_end(data)
    if end is None:
        return (HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, head_too_large(limit)) if len(data) > limit else None
    return framing_refusal(data[:end], chunked_allowed=chunked_allowed) or end


# -- slow clients -------------------------------------------------------------------------------------------------

REQUEST_DEADLINE_S = 10.0  # from the connection opening (or the last answer) to the whole request read
SLOW_AFTER_S = 1.0  # a connection still without a whole request after this long is a slow one
MAX_SLOW_PER_CLIENT = 8
MAX_WAITING = 512  # connections waiting for their request, from every client together
WRITE_TIMEOUT_S = 15.0  # a client that reads nothing of its answer for this long is cut
DEADLINE_PASSED = f"the request was not whole within {REQUEST_DEADLINE_S:g}s"
T = TypeVar("T")


def fd_limit() -> int | None:
    """The process's soft limit on open file descriptors, None when it has none (or none is known)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):  # no such limit here
        return None
    return None if soft == resource.RLIM_INFINITY else soft


def waiting_cap() -> int:
    """``MAX_WAITING``, or half the process's file descriptor limit when that is lower (the other half is kept
    for answering: the connections being answered, and the files answering opens)."""
    soft = fd_limit()
    return MAX_WAITING if soft is None else max(16, min(MAX_WAITING, soft // 2))


def beyond_slow_cap(slow: Sequence[T]) -> list[T]:
    """Of one address's connections that have waited over ``SLOW_AFTER_S``, oldest first, the ones to cut: all
    but the newest ``MAX_SLOW_PER_CLIENT``."""
    return list(slow[: max(0, len(slow) - MAX_SLOW_PER_CLIENT)])


def too_many_slow(client: str) -> str:
    """Why a connection cut by ``beyond_slow_cap`` was cut (its client gets it with 408)."""
    return f"more than {MAX_SLOW_PER_CLIENT} slow connections from {client}"


def closing_answer(status: HTTPStatus, message: str, headers: Mapping[str, str] | None = None) -> bytes:
    """The whole answer of a refused connection, written before it is closed: ``status`` and one plain line
    (``toolkg serve`` adds its security headers, ``headers``)."""
    body = f"{status.value} {message}\n".encode()
    extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    head = (
        f"HTTP/1.1 {status.value} {status.phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n{extra}"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body
