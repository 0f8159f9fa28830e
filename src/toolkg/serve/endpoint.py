"""`toolkg serve`: a read-only SPARQL 1.1 endpoint with a browser UI over a store's snapshots.

Consistency while a build runs: Oxigraph documents a read-only open beside a live writer as
undefined behaviour, so the endpoint never opens the database a build writes. Every build
publishes a snapshot (``store/snapshots.py``); the endpoint queries the current one in a process of its
own that has no address, only a socket pair to this one (``toolkg.serve.backend``): the proxy's public
address is the only way in.

What the endpoint adds to the query engine, in the order a request meets it:
- requests read whole by one thread before a bounded pool of workers answers them, against a deadline for
  the whole request, with a cap on one address's slow connections (``toolkg.serve.http_server``): a client
  that drips bytes holds no worker and is cut; a listen backlog of 128, so a burst of clients queues;
- the request read strictly (``sparql_protocol``): a bad Content-Length is a 400, a huge body a 413;
- updates and Graph Store writes refused (403) before they reach anything;
- the query checked (``toolkg.store.query_guard``): size, nesting and complexity under what crashes Oxigraph,
  ``SERVICE`` refused unless ``--allow-federation`` (otherwise the backend fetches any URL it is given);
- the project's prefixes (``tk:``...) known without declaring them (handed to the backend beside the query, so
  error positions are the query's own);
- the answer relayed only when it is whole and in time: at the timeout the client gets 504 (never a truncated
  200) and the backend is replaced; a backend that died on a query is replaced and the client gets 502.
Plus: the UI (Oxigraph's YASGUI read out of its binary, no CDN, and the UI's own files in ``serve/ui/``), the saved
analyst queries with their parameters, the ontology's page and its terms (the editor's completion), a page per
IRI (``/resource``, ``resource_page``), ``/status`` (the backend's real state) and ``/search``
(``toolkg.toolsearch``). Every response carries the headers of ``page_policy``: a Content-Security-Policy that
keeps the pages to this origin, no framing, no sniffing.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from toolkg.display import one_line
from toolkg.errors import ConfigError, NotFoundError, StoreError, ToolkgError
from toolkg.netpolicy import HostPolicy, bind_failure, is_local_bind
from toolkg.ontology import PREFIXES, iris
from toolkg.serve.assets import asset
from toolkg.serve.backend import MEMORY_LIMIT_MIB, Backends
from toolkg.serve.http_server import OneRequestHandler, PooledHTTPServer
from toolkg.serve.page_policy import DEFAULT_POLICY, STRICT_POLICY, policy_with_inline_styles, security_headers
from toolkg.serve.resource_page import BadIri, checked_iri, read_resource, resource_html
from toolkg.serve.sparql_protocol import READ_ONLY, BadRequest, parse_request, read_body
from toolkg.store.query_guard import DEFAULT_LIMITS, QueryLimits, QueryRefused, check_query
from toolkg.store.saved_queries import saved_queries, saved_query
from toolkg.store.sparql_sandbox_worker import MEMORY_EXCEEDED_STATUS

if TYPE_CHECKING:  # loaded on the first /search
    from toolkg.toolsearch.service import ToolSearch

QUERY_PATHS = ("/query", "/sparql")
ASSETS = ("/yasgui.min.js", "/yasgui.min.css", "/logo.svg")
# The UI's own files (serve/ui/): path -> content type. Scripts and styles are files, never inline: the
# Content-Security-Policy allows scripts from this origin only.
UI_FILES = {"/ui.js": "application/javascript", "/ui.css": "text/css", "/resource.css": "text/css"}
WRITE_PATHS = ("/update", "/store")
_PLAIN_HOST = re.compile(r"[A-Za-z0-9.\-]+(:\d+)?|\[[0-9A-Fa-f:.]+\](:\d+)?")  # host[:port], [v6][:port]


class Endpoint:
    """The proxy's state: the backends, the query limits, and what is loaded once (assets, search)."""

    def __init__(
        self,
        store_dir: str | Path,
        timeout_s: int = 30,
        limits: QueryLimits = DEFAULT_LIMITS,
        allow_remote=False,
        memory_limit_mib: int = MEMORY_LIMIT_MIB,
    ) -> None:
        self.store_dir = Path(store_dir)
        self.allow_remote = allow_remote
        self.timeout_s = timeout_s
        self.limits = limits
        self.backends = Backends(
            store_dir, timeout_s, allow_service=limits.allow_service, memory_limit_mib=memory_limit_mib
        )
        self._lock = threading.Lock()
        self._search: ToolSearch | None = None  # when /search is first asked

    def status(self) -> dict[str, object]:
        status = self.backends.status()
        status["federation"] = self.limits.allow_service
        status["query_limits"] = {
            "max_bytes": self.limits.max_bytes,
            "max_depth": self.limits.max_depth,
            "max_complexity": self.limits.max_complexity,
        }
        return status

    def search(self, query: str, k: int, steps: list[str]) -> dict[str, object]:
        """``/search``: ranked tools with what to call first (toolkg.toolsearch), loaded on first use."""
        with self._lock:
            if self._search is None:
                from toolkg.toolsearch.service import ToolSearch

                self._search = ToolSearch(self.store_dir)
        found = self._search.search_tools(query, k, steps)
        for tool in found["tools"]:  # the UI links each tool, and each to call first, to its page (/resource)
            tool.setdefault("iri", iris.tool_iri_from_id(tool["id"]).value)
            for first in tool.get("call_first", []):
                first.setdefault("iri", iris.tool_iri_from_id(first["tool"]).value)
        return {"query": query, "steps": steps, "snapshot": self._search.snapshot, **found}

    def select(self, query: str) -> list[dict[str, dict[str, str]]]:
        """The SPARQL JSON bindings of a SELECT the endpoint writes itself (the resource page's)."""
        status, body, _, _ = self.run(query, [], "application/sparql-results+json")
        if status != 200:
            raise StoreError(f"the store could not answer ({status}): {one_line(body.decode('utf-8', 'replace'))}")
        return json.loads(body)["results"]["bindings"]

    def run(
        self, query: str, graphs: list[tuple[str, str]], accept: str, base: str | None = None
    ) -> tuple[int, bytes, str, str]:
        """(status, body, content type, snapshot) for a checked query; 504 at the timeout, never partial."""
        backend = self.backends.acquire()
        deadline = time.monotonic() + self.timeout_s
        try:
            status, body, content_type = backend.ask(query, deadline, graphs=graphs, accept=accept, base=base)
        except TimeoutError:
            self.backends.replace(backend, f"a query ran past the {self.timeout_s}s timeout")
            message = f"query timed out after {self.timeout_s}s (toolkg serve --timeout); its answer was dropped"
            return 504, message.encode(), "text/plain; charset=utf-8", backend.snapshot.name
        except (OSError, ValueError) as exc:  # BackendError included; ValueError: an answer that is not one
            self.backends.check(backend)
            if backend.out_of_memory():
                message = self.backends.memory_exceeded() + "\n"
                return MEMORY_EXCEEDED_STATUS, message.encode(), "text/plain; charset=utf-8", backend.snapshot.name
            reason = "it died on this query and was restarted" if not backend.alive() else one_line(str(exc))
            return 502, f"SPARQL backend failed: {reason}".encode(), "text/plain; charset=utf-8", backend.snapshot.name
        finally:
            self.backends.release(backend)
        return status, body, content_type, backend.snapshot.name

    def close(self) -> None:
        self.backends.close()
        if self._search is not None:
            self._search.close()


def _page(name: str = "index.html") -> bytes:
    return (resources.files("toolkg.serve") / "ui" / name).read_bytes()


def _ontology_page() -> tuple[bytes, str]:
    """pyLODE's page and the policy that lets exactly its inline style sheets apply (it has no script)."""
    from toolkg.ontology.docs import ontology_html

    html = ontology_html()
    return html.encode(), policy_with_inline_styles(*re.findall(r"<style[^>]*>(.*?)</style>", html, re.S))


class Handler(OneRequestHandler):
    endpoint: Endpoint  # set on the subclass make_server makes
    host_policy: HostPolicy  # likewise: the names this endpoint answers to
    protocol_version = "HTTP/1.1"
    # What the standard library answers for requests it cannot parse: one plain line like every other refusal,
    # and a status line even for a request line without a version (it would answer HTTP/0.9: a bare body).
    default_request_version = "HTTP/1.0"
    error_content_type = "text/plain; charset=utf-8"
    error_message_format = "%(code)d %(message)s: %(explain)s\n"
    _policy = DEFAULT_POLICY  # the Content-Security-Policy of the response being sent (``_send`` may set another)

    def log_message(self, format: str, *args) -> None:  # quiet: one line per request is noise here
        pass

    def end_headers(self) -> None:
        """Every response's security headers (``page_policy``), the standard library's error pages included."""
        for key, value in security_headers(self._policy).items():
            self.send_header(key, value)
        self._policy = DEFAULT_POLICY
        super().end_headers()

    def _send(
        self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None, policy: str = ""
    ) -> None:
        self._policy = policy or DEFAULT_POLICY
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _text(self, status: int, message: str) -> None:
        self._send(status, (one_line(message) + "\n").encode(), "text/plain; charset=utf-8")

    def _json(self, status: int, value: object) -> None:
        self._send(status, json.dumps(value, ensure_ascii=False).encode(), "application/json")

    def _foreign(self) -> str | None:
        """Why a request that a web page could have made must be refused, if it must (``toolkg.netpolicy``).

        A page in the user's browser can POST a form to the endpoint (a "simple" request, with its Origin) or, by
        DNS rebinding, reach it under its own host name (the Host), whatever address the endpoint listens on."""
        return self.host_policy.refusal(self.headers.get_all("Host") or [], self.headers.get_all("Origin") or [])

    def do_GET(self) -> None:
        if self.headers.get("Content-Length", "0").strip() not in ("", "0"):
            self.close_connection = True  # a GET's body is never read: it must not be taken for the next request
        if reason := self._foreign():
            return self._text(403, reason)
        url = urlsplit(self.path)
        path = url.path
        if path in ("/", "/index.html"):
            self._send(200, _page(), "text/html; charset=utf-8")
        elif path == "/saved-queries":
            self._json(200, [q.as_json() for q in saved_queries().values()])
        elif path == "/saved-queries/render":
            self._render_saved(parse_qs(url.query, keep_blank_values=True))
        elif path == "/prefixes":
            self._json(200, PREFIXES)
        elif path in ("/ontology", "/ontology/"):
            body, policy = _ontology_page()
            self._send(200, body, "text/html; charset=utf-8", policy=policy)
        elif path == "/ontology/terms":
            from toolkg.ontology.docs import vocabulary_terms

            self._json(200, vocabulary_terms())
        elif path == "/resource":
            self._resource(parse_qs(url.query, keep_blank_values=True))
        elif path in UI_FILES:
            self._send(200, _page(path.lstrip("/")), UI_FILES[path], {"Cache-Control": "no-cache"})
        elif path == "/ontology/context.jsonld":
            from toolkg.ontology.docs import jsonld_context

            self._send(200, json.dumps(jsonld_context(), indent=1).encode(), "application/ld+json")
        elif path == "/status":
            status = self.endpoint.status()
            backend = status["backend"]
            assert isinstance(backend, dict), "status() describes the backend in a dict"
            self._json(200 if backend["state"] == "up" else 503, status)
        elif path == "/search":
            self._search(parse_qs(url.query))
        elif path in ASSETS:
            try:
                content_type, body = asset(path)
            except (OSError, ToolkgError) as exc:
                return self._text(503, f"the UI file is unavailable: {exc}")
            self._send(200, body, content_type, {"Cache-Control": "max-age=3600"})
        elif path in QUERY_PATHS:
            self._query()
        elif path in WRITE_PATHS:
            self._text(403, READ_ONLY)
        else:
            self._text(404, "not found")

    do_HEAD = do_GET

    def do_POST(self) -> None:
        if reason := self._foreign():
            self.close_connection = True
            return self._text(403, reason)
        path = urlsplit(self.path).path
        if path in QUERY_PATHS:
            self._query()
        elif path in WRITE_PATHS:
            self.close_connection = True  # its body is not read
            self._text(403, READ_ONLY)
        else:
            self.close_connection = True
            self._text(404, "not found")

    def do_PUT(self) -> None:
        self.close_connection = True
        self._text(403, READ_ONLY)

    do_DELETE = do_PATCH = do_PUT

    def _render_saved(self, params: dict[str, list[str]]) -> None:
        """GET /saved-queries/render?name=NAME&PARAM=VALUE: the saved query with the values bound (as escaped
        literals, never SPARQL), for the UI's parameter forms; 400/404 with {"error": one line}."""
        name = (params.pop("name", None) or [""])[0]
        try:
            query = saved_query(name).render({key: values[-1] for key, values in params.items()})
        except ToolkgError as exc:
            return self._json(404 if isinstance(exc, NotFoundError) else 400, {"error": one_line(str(exc))})
        self._json(200, {"name": name, "query": query})

    def _search(self, params: dict[str, list[str]]) -> None:
        """GET /search?q=TEXT[&k=N][&step=TEXT...]: JSON, or 400 with {"error": one line}."""
        try:
            k = int((params.get("k") or ["5"])[0])
            answer = self.endpoint.search((params.get("q") or [""])[0], k, params.get("step") or [])
        except (ValueError, ToolkgError) as exc:
            return self._json(404 if isinstance(exc, NotFoundError) else 400, {"error": one_line(str(exc))})
        self._json(200, answer)

    def _resource(self, params: dict[str, list[str]]) -> None:
        """GET /resource?iri=IRI: the store's triples about IRI as a page (``resource_page``); 400 for a bad IRI."""
        try:
            iri = checked_iri((params.get("iri") or [""])[0])
            resource = read_resource(iri, self.endpoint.select)
        except BadIri as exc:
            return self._text(400, str(exc))
        except StoreError as exc:
            return self._text(503, str(exc))
        status = 200 if resource.known else 404
        self._send(status, resource_html(resource).encode(), "text/html; charset=utf-8", policy=STRICT_POLICY)

    def _base_iri(self) -> str | None:
        """What relative IRIs in a query resolve against: this endpoint's query URL, as Oxigraph's server did
        with its own (a Host that is not a plain host[:port] gets none, and relative IRIs are then an error)."""
        host = self.headers.get("Host") or ""
        return f"http://{host}/query" if _PLAIN_HOST.fullmatch(host) else None

    def _query(self) -> None:
        """A SPARQL query: read, checked, declared, run; each refusal a status and one line."""
        try:
            body = read_body(self.headers, self.rfile) if self.command == "POST" else b""
            if self.command == "POST" and self.headers.get("Content-Length") is None:
                raise BadRequest(411, "a POST needs a Content-Length")
            request = parse_request(self.command, urlsplit(self.path).query, self.headers, body)
            check_query(request.query, self.endpoint.limits)
        except BadRequest as exc:
            self.close_connection = exc.status in (400, 408, 411, 413)  # the body may be unread or misframed
            return self._text(exc.status, exc.message)
        except QueryRefused as exc:
            return self._text(exc.status, str(exc))
        # No Accept: SPARQL JSON for SELECT and ASK, N-Quads for CONSTRUCT and DESCRIBE (as Oxigraph's server).
        accept = self.headers.get("Accept") or ""
        try:
            status, payload, content_type, snapshot = self.endpoint.run(
                request.query, request.graphs, accept, self._base_iri()
            )
        except StoreError as exc:  # no backend up
            return self._text(503, str(exc))
        self._send(status, payload, content_type, {"X-Toolkg-Snapshot": snapshot})


def parse_bind(bind: str) -> tuple[str, int]:
    host, sep, port = bind.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"--bind takes HOST:PORT, not {bind!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def is_loopback(host: str) -> bool:
    """Whether listening on ``host`` keeps the endpoint to this machine: 127.0.0.1, ::1, or localhost resolving
    to them; not the rest of 127.0.0.0/8 (``toolkg.netpolicy``)."""
    return is_local_bind(host)


class EndpointServer(PooledHTTPServer):
    """The endpoint's HTTP server, with the endpoint it answers for (``make_server`` sets it)."""

    endpoint: Endpoint


def make_server(
    store_dir: str | Path,
    bind: str = "127.0.0.1:7878",
    timeout_s: int = 30,
    *,
    allow_remote: bool = False,
    limits: QueryLimits = DEFAULT_LIMITS,
    allowed_hosts: tuple[str, ...] = (),
    memory_limit_mib: int = MEMORY_LIMIT_MIB,
) -> EndpointServer:
    """The endpoint's HTTP server (not yet serving); ``server.endpoint.close()`` stops the SPARQL backend. It answers
    requests naming the bound address (the loopback names on a local bind) or one of ``allowed_hosts``."""
    host, port = parse_bind(bind)
    if not is_loopback(host) and not allow_remote:
        raise ConfigError(
            f"refusing to listen on {host}: it is not 127.0.0.1, ::1 or localhost and the endpoint has no "
            "authentication (add --allow-remote to do it anyway)"
        )
    policy = HostPolicy.for_bind(host, allowed_hosts)
    endpoint = Endpoint(store_dir, timeout_s, limits, allow_remote, memory_limit_mib)
    handler = type("BoundHandler", (Handler,), {"endpoint": endpoint, "host_policy": policy})
    # An IPv6 address needs an IPv6 socket (HTTPServer's is IPv4).
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server_class = type("PooledHTTPServer", (EndpointServer,), {"address_family": family})
    try:
        server: EndpointServer = server_class((host, port), handler)
    except OSError as exc:
        endpoint.close()
        raise bind_failure(host, port, exc) from None
    server.endpoint = endpoint
    return server
