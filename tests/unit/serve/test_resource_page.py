"""The resource page's HTML for any text a catalog can hold: values only as escaped text, IRIs only as links to
their page on the endpoint, whatever the IRI's scheme; and ``checked_iri`` lets nothing into a query but an IRI."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolkg.serve.resource_page import BadIri, checked_iri, read_resource, resource_html

TAGS = {"html", "head", "meta", "title", "link", "body", "header", "nav", "a", "main", "h1", "h2", "p", "code"}
TAGS |= {"table", "thead", "tbody", "tr", "th", "td", "span"}
ATTRIBUTES = {"lang", "charset", "rel", "href", "type", "title", "class"}


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict]] = []
        self.text = ""

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text += data


iris = st.builds(
    lambda scheme, rest: f"{scheme}:{rest}",
    st.sampled_from(["https", "http", "javascript", "data", "urn", "vbscript"]),
    st.text(st.characters(blacklist_characters='<>"{}|^`\\ ', blacklist_categories=("Cc", "Cs", "Zs")), max_size=40),
)
texts = st.text(max_size=80)


@given(subject=iris, value=texts, other=iris, language=st.sampled_from([None, "en", "x<y"]))
def test_the_page_shows_values_as_text_and_links_only_to_itself(subject, value, other, language):
    literal = {"type": "literal", "value": value} | ({"xml:lang": language} if language else {})
    graph = {"type": "uri", "value": "https://w3id.org/toolkg/id/graph/server/s"}

    def select(query: str):
        if "?p ?o ?g" in query:
            return [
                {"p": {"type": "uri", "value": "http://purl.org/dc/terms/description"}, "o": literal, "g": graph},
                {"p": {"type": "uri", "value": other}, "o": {"type": "uri", "value": other}, "g": graph},
            ]
        if "?s ?p ?g" in query:
            return [{"s": {"type": "uri", "value": other}, "p": {"type": "uri", "value": other}, "g": graph}]
        return [
            {
                "s": {"type": "uri", "value": other},
                "p": {"type": "uri", "value": "http://www.w3.org/2000/01/rdf-schema#label"},
                "label": {"type": "literal", "value": value},
            }
        ]

    page = _Page()
    page.feed(resource_html(read_resource(checked_iri(subject), select)))
    assert {tag for tag, _ in page.elements} <= TAGS
    assert {name for _, attrs in page.elements for name in attrs} <= ATTRIBUTES
    hrefs = [attrs["href"] for tag, attrs in page.elements if "href" in attrs]
    assert all(
        h.startswith("/resource?iri=") or h in ("/", "/ontology", "/status", "/resource.css", "/logo.svg")
        for h in hrefs
    )
    shown = " ".join(value.split())
    assert not shown or shown in " ".join(page.text.split())


@pytest.mark.parametrize(
    "bad", ["", "x", "no scheme", "http://a b", "http://a/<b>", 'http://a/"', "http://a/{}", "1http://a"]
)
def test_what_is_no_iri_is_refused_in_one_line(bad):
    with pytest.raises(BadIri) as refused:
        checked_iri(bad)
    assert "\n" not in str(refused.value)


@given(st.text(max_size=60))
def test_an_accepted_iri_cannot_leave_its_brackets(value):
    try:
        iri = checked_iri(value)
    except BadIri:
        return
    assert not set(iri) & set('<>"{}|^`\\') and not any(c.isspace() or ord(c) < 32 for c in iri)
