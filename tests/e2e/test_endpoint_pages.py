"""`toolkg serve` over real HTTP on 127.0.0.1: the security headers on every kind of response, the page per IRI
(`/resource`) with its links kept on the endpoint and its values escaped, the ontology's terms for the editor and
the tool search's links. The same pages in the browser: test_ui_pages.py."""

from __future__ import annotations

import json
import re
import socket
import urllib.parse
from html.parser import HTMLParser

import pytest

from tests.conftest import CASES
from tests.support.endpoint_helpers import get, request, serving

TK = "https://w3id.org/toolkg/ontology#"
TOOL = "https://w3id.org/toolkg/id/tool/shop/acme_place_order"
HOSTILE_DESCRIPTION = '<script>window.hit=1</script><img src=x onerror="window.hit=2"> places "orders" & more'


@pytest.fixture(scope="module")
def store(built_store):
    return built_store(CASES / "inference" / "shop.json", links=False)


@pytest.fixture(scope="module")
def hostile_store(built_store, tmp_path_factory):
    """One server whose tool's description is markup, as anyone who writes a catalog can make it."""
    folder = tmp_path_factory.mktemp("hostile-page")
    tools = [
        {"name": "place_order", "description": HOSTILE_DESCRIPTION, "parameters": []},
        {"name": "login", "description": "Logs in.", "parameters": []},
    ]
    (folder / "evil.json").write_text(json.dumps(tools))
    return built_store(folder / "evil.json", links=False)


@pytest.fixture(scope="module")
def base(store):
    with serving(store) as url:
        yield url


def _raw(base: str, data: bytes) -> str:
    host, port = urllib.parse.urlsplit(base).netloc.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(data)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def _csp(headers: dict[str, str]) -> dict[str, str]:
    policy = headers["Content-Security-Policy"]
    return {d.split()[0]: d.partition(" ")[2] for d in (p.strip() for p in policy.split(";")) if d}


def _assert_secured(headers: dict[str, str], what: str) -> None:
    headers = {k.title(): v for k, v in headers.items()}
    assert headers.get("X-Content-Type-Options") == "nosniff", what
    assert headers.get("X-Frame-Options") == "DENY", what
    csp = _csp(headers)
    assert csp["frame-ancestors"] == "'none'" and csp["default-src"] == "'none'", (what, csp)
    assert csp["script-src"] == "'self'" and csp["connect-src"] == "'self'", (what, csp)
    assert "'unsafe-eval'" not in headers["Content-Security-Policy"], what


def test_every_kind_of_response_carries_the_security_headers(base):
    form = urllib.parse.urlencode({"query": "ASK {}"}).encode()
    for what, (url, data, method, extra) in {
        "the UI": (base + "/", None, "GET", {}),
        "the UI's script": (base + "/ui.js", None, "GET", {}),
        "YASGUI": (base + "/yasgui.min.js", None, "GET", {}),
        "JSON": (base + "/prefixes", None, "GET", {}),
        "the ontology": (base + "/ontology", None, "GET", {}),
        "a query": (base + "/query", form, "POST", {"Content-Type": "application/x-www-form-urlencoded"}),
        "a bad query": (base + "/query?query=SELEC", None, "GET", {}),
        "a write": (base + "/update", b"x", "POST", {}),
        "a foreign origin": (base + "/query", form, "POST", {"Origin": "https://evil.example"}),
        "not found": (base + "/nope", None, "GET", {}),
        "a resource": (base + "/resource?iri=" + urllib.parse.quote(TOOL), None, "GET", {}),
        "a bad IRI": (base + "/resource?iri=not%20an%20iri", None, "GET", {}),
        "a method the server lacks": (base + "/", None, "OPTIONS", {}),
    }.items():
        status, _, headers = request(url, data, method=method, headers=extra)
        assert status < 600, what
        _assert_secured(headers, f"{what} ({status})")
    # What the standard library answers itself (a request line it cannot parse) carries them too.
    answer = _raw(base, b"GET /\x00 HTTP/1.1 x\r\nHost: x\r\n\r\n")
    head = dict(line.split(": ", 1) for line in answer.split("\r\n\r\n")[0].split("\r\n")[1:])
    assert answer.startswith("HTTP/1.") and answer.split()[1].startswith("4"), answer[:80]
    _assert_secured(head, "the standard library's 400")
    # And what the reading thread refuses before any handler runs (an ambiguous request end).
    answer = _raw(base, b"POST /query HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\nhello")
    head = dict(line.split(": ", 1) for line in answer.split("\r\n\r\n")[0].split("\r\n")[1:])
    assert answer.split()[1] == "400", answer[:80]
    _assert_secured(head, "the reading thread's 400")


class _Page(HTMLParser):
    """Every element with its attributes, and the text, of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def _parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    return page


def test_a_tool_has_a_page_with_its_triples_both_ways_and_local_links(base):
    status, html, headers = request(base + "/resource?iri=" + urllib.parse.quote(TOOL, safe=""), method="GET")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert "'unsafe-inline'" not in headers["Content-Security-Policy"]  # this page sets no style attribute
    page = _parse(html)
    text = " ".join(page.text)
    assert "<h1>acme_place_order</h1>" in html  # its label heads the page
    assert "What it says" in text and "What points to it" in text
    # Labels come first (rdfs:label, tk:name, tk:identifier), then rdf:type, then the rest.
    rows = re.findall(r"<tr><td><a href=\"[^\"]*\" title=\"([^\"]+)\"", html.split("What points to it")[0])
    labels = {"http://www.w3.org/2000/01/rdf-schema#label", TK + "name", TK + "identifier"}
    assert set(rows[:3]) == labels, rows[:4]
    assert rows.index("http://www.w3.org/1999/02/22-rdf-syntax-ns#type") < rows.index(TK + "hasParameter")
    # Outgoing: its parameters and dependencies; incoming: the server that has it.
    assert "Places an order" in text and "tk:hasParameter" in text and "tk:dependsOn" in text
    incoming = html.split("What points to it")[1]
    assert "tk:hasTool" in incoming and "/resource?iri=https%3A%2F%2Fw3id.org%2Ftoolkg%2Fid%2Fserver%2Fshop" in incoming
    # Every link stays on the endpoint: IRIs open their own page here, never w3id.org.
    links = [a["href"] or "" for tag, a in page.elements if tag == "a"]  # a valueless href fails the check
    assert links and all(h.startswith("/resource?iri=") or h in ("/", "/ontology", "/status") for h in links), links
    assert not [tag for tag, _ in page.elements if tag == "script"]
    # A linked IRI's page is there too (the parameter the tool has).
    parameter = next(h for h in links if "param" in h)
    status, html, _ = request(base + parameter, method="GET")
    assert status == 200 and "What points to it" in html and "acme_place_order" in html


def test_a_bad_or_unknown_iri_is_one_line_or_an_empty_page(base):
    for bad in ("", "no-scheme", "http://x/<script>", "http://x/ y", "a" * 5000):
        status, body, headers = request(base + "/resource?iri=" + urllib.parse.quote(bad), method="GET")
        assert status == 400 and headers["Content-Type"].startswith("text/plain"), (bad, status)
        assert body.count("\n") == 1 and "Traceback" not in body, body
    status, html, _ = request(base + "/resource?iri=" + urllib.parse.quote("https://example.org/nothing"), method="GET")
    assert status == 404 and "no triple about this IRI" in html


def test_an_ontology_terms_page_links_to_its_definition(base):
    """tk:BuildRun's entry on the ontology page is #Buildrun (pyLODE's naming): the link must find it."""
    for term in ("Tool", "BuildRun", "dependsOn"):
        status, html, _ = request(base + "/resource?iri=" + urllib.parse.quote(TK + term, safe=""), method="GET")
        assert status == 200, term
        [href] = re.findall(r'<a href="(/ontology#[^"]+)">its definition</a>', html)
        _, ontology, _ = request(base + "/ontology", method="GET")
        assert f'id="{href.partition("#")[2]}"' in ontology, href


def test_markup_in_a_description_and_a_javascript_iri_stay_text(hostile_store):
    with serving(hostile_store) as url:
        iri = "https://w3id.org/toolkg/id/tool/evil/place_order"
        status, html, _ = request(url + "/resource?iri=" + urllib.parse.quote(iri, safe=""), method="GET")
        assert status == 200
        page = _parse(html)
        assert HOSTILE_DESCRIPTION in "".join(page.text)  # shown, as text
        tags = {tag for tag, _ in page.elements}
        assert not tags & {"script", "img", "iframe", "object", "svg", "style"}, tags
        assert all(not name.startswith("on") for _, attrs in page.elements for name in attrs)
        status, html, _ = request(url + "/resource?iri=" + urllib.parse.quote("javascript:alert(1)"), method="GET")
        assert status == 404 and "javascript:alert(1)" in html
        hrefs = [attrs.get("href") or "" for _, attrs in _parse(html).elements]
        assert not [h for h in hrefs if h.lower().startswith("javascript")], hrefs


def test_the_editor_completes_from_the_ontology_and_search_gives_tool_pages(base):
    terms = get(base + "/ontology/terms")
    assert TK + "Tool" in terms["classes"] and TK + "dependsOn" in terms["properties"]
    assert TK + "Tool" not in terms["properties"] and TK + "hasParameter" not in terms["classes"]
    found = get(base + "/search?q=" + urllib.parse.quote("place an order for a product") + "&k=3")
    first = found["tools"][0]
    assert first["iri"] == "https://w3id.org/toolkg/id/tool/" + first["id"].replace("::", "/")
    assert all(c["iri"].endswith("/" + c["tool"].split("::")[1]) for t in found["tools"] for c in t["call_first"])
