"""``toolkg.netpolicy.framing_refusal``: a request head whose end two HTTP readers could place differently is refused,
whatever the spelling of the headers that make it so; an unambiguous one passes."""

from __future__ import annotations

from http import HTTPStatus

from hypothesis import given
from hypothesis import strategies as st

from toolkg.netpolicy import framing_refusal

NAMES = st.sampled_from(["Content-Length", "content-length", "CONTENT-LENGTH", "Content-length"])
LENGTHS = st.integers(0, 10**6).map(str)
OTHER = st.lists(
    st.tuples(st.sampled_from(["Host", "Accept", "X-Note", "Content-Type"]), st.text("abc/ =;", max_size=10)),
    max_size=4,
)


def _head(lines: list[str]) -> bytes:
    return ("POST /query HTTP/1.1\r\n" + "".join(f"{line}\r\n" for line in lines) + "\r\n").encode("latin-1")


@given(OTHER, NAMES, LENGTHS)
def test_one_length_in_ascii_digits_passes(other, name, length):
    lines = [f"{k}: {v}" for k, v in other] + [f"{name}: {length}"]
    assert framing_refusal(_head(lines)) is None


@given(OTHER, st.lists(st.tuples(NAMES, LENGTHS), min_size=2, max_size=4), st.randoms())
def test_two_lengths_are_refused_even_when_equal(other, lengths, rng):
    lines = [f"{k}: {v}" for k, v in other] + [f"{name}: {value}" for name, value in lengths]
    rng.shuffle(lines)
    assert framing_refusal(_head(lines)) == (HTTPStatus.BAD_REQUEST, "more than one Content-Length header")


@given(NAMES, st.lists(LENGTHS, min_size=2, max_size=3), st.sampled_from([",", ", ", " ,"]))
def test_a_list_of_lengths_is_refused(name, values, comma):
    refusal = framing_refusal(_head([f"{name}: {comma.join(values)}"]))
    assert refusal is not None and refusal[0] == HTTPStatus.BAD_REQUEST


@given(NAMES, LENGTHS, st.sampled_from(["chunked", "gzip, chunked", "identity"]), st.booleans())
def test_a_length_with_transfer_encoding_is_refused_by_both_servers(name, length, coding, allowed):
    lines = [f"{name}: {length}", f"Transfer-Encoding: {coding}"]
    assert framing_refusal(_head(lines), chunked_allowed=allowed) == (
        HTTPStatus.BAD_REQUEST,
        "both Content-Length and Transfer-Encoding",
    )


def test_chunked_alone_is_411_where_bodies_are_not_read_chunked_and_passes_where_they_are():
    head = _head(["Transfer-Encoding: chunked"])
    assert framing_refusal(head)[0] == HTTPStatus.LENGTH_REQUIRED  # type: ignore[index]
    assert framing_refusal(head, chunked_allowed=True) is None


@given(
    st.sampled_from([" Content-Length: 5", "\tX: y", "Content-Length : 5", " Content-Length:5", "Content-Length\t: 5"])
)
def test_folded_lines_and_padded_names_are_refused(line):
    assert framing_refusal(_head(["Host: a", line])) is not None


def test_digits_python_reads_but_http_does_not_are_refused():
    digits = [c for c in map(chr, range(256)) if c.isdigit() and not c.isascii()]  # ², ³, ¹
    assert digits and all(framing_refusal(_head([f"Content-Length: {d}"])) is not None for d in digits)
