"""A live server's configured secrets are blanked out of all it answers (toolkg.live.redaction, issue 40)."""

from __future__ import annotations

import os
import re
import sys
import tempfile

import anyio
from hypothesis import assume, given
from hypothesis import strategies as st

from toolkg.live.listing import STDERR_TAIL, Listing, list_one, redacted, stderr_tail
from toolkg.live.redaction import MARKER, Redactor, looks_like_key, secret_values
from toolkg.live.sources import ServerSpec

KEY = "sk-proj-Zx81kQm2Lr7Tn4Vb"


def test_the_secrets_of_a_configuration_are_its_env_headers_url_credentials_and_key_arguments() -> None:
    found = secret_values(
        env={"GITHUB_TOKEN": "ghp_0123456789abcdef", "LOG_LEVEL": "on"},
        headers={"Authorization": "Bearer tok_live_98765", "X-Tenant": "acme-corp"},
        url="https://robot:hunter22@mcp.example.com/mcp?api_key=qk_5566778899&region=eu-west-1",
    )
    assert set(found) >= {
        "ghp_0123456789abcdef",
        "Bearer tok_live_98765",
        "tok_live_98765",  # the token alone, without its scheme
        "acme-corp",
        "robot",
        "hunter22",
        "qk_5566778899",
        "eu-west-1",
    }
    assert "on" not in found and "Bearer" in found  # too short to be anyone's secret; "Bearer" is harmless
    assert found == sorted(found, key=len, reverse=True)  # longest first

    args = [
        "-y",
        "@modelcontextprotocol/server-github@2025.4.8",
        "--repository",
        "/home/me/project",
        "--api-key",
        "plain-words-key",
        "--token=t0k3n-value",
        "-e",
        "SLACK_BOT_TOKEN=xoxb-1234-5678",
        KEY,
        "https://api.example.com/v1?access_token=at_42424242",
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
    ]
    found = secret_values(args=args)
    assert set(found) == {
        "plain-words-key",
        "t0k3n-value",
        "xoxb-1234-5678",
        KEY,
        "at_42424242",
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",  # shaped like a key: long, letters and digits mixed
    }
    spec = ServerSpec(name="s", source="x", transport="stdio", command="npx", args=tuple(args), env={"K": "v4lue-123"})
    assert set(spec.secrets()) == {*found, "v4lue-123"}


def test_what_looks_like_a_key() -> None:
    for key in (KEY, "ghp_abcdefgh", "AKIAIOSFODNN7EXAMPLE", "eyJhbGciOiJIUzI1NiJ9", "a1b2c3d4e5f6g7h8i9j0k1"):
        assert looks_like_key(key), key
    for word in ("mcp-server-filesystem", "/home/me/x1234567890abcdefghij", "--repository", "2025-06-18", "skate"):
        assert not looks_like_key(word), word


def test_short_values_are_blanked_as_whole_words_and_long_ones_anywhere() -> None:
    redactor = Redactor(["on", "info", "8080", "longsecretvalue"])
    assert redactor.text("turn on the light") == "turn on the light"  # under 4 characters: never a secret
    assert redactor.text("LOG_LEVEL=info; more information at :8080/info") == (
        "LOG_LEVEL=[redacted]; more information at :[redacted]/[redacted]"
    )
    assert redactor.text("INFO here, port 18080") == "[redacted] here, port 18080"
    assert redactor.text("xLONGSECRETVALUEx and longsecretvalue_") == "x[redacted]x and [redacted]_"


def test_overlapping_and_nested_secrets_leave_no_piece_of_either() -> None:
    redactor = Redactor(["abcdefgh", "efghijkl", "cdef1234cdef"])
    assert redactor.text("__abcdefghijkl__") == f"__{MARKER}__"  # overlapping: one blank over both
    assert redactor.text("abcdefgh-abcdefgh") == f"{MARKER}-{MARKER}"
    assert redactor.text("xcdef1234cdefx") == f"x{MARKER}x"


def test_a_secret_formed_by_the_blank_itself_is_blanked_again() -> None:
    redactor = Redactor(["d]tail-xyz", "longsecretvalue"])  # "[redacted]" + "tail-xyz" ends in the first one
    assert "d]tail-xyz" not in redactor.text("longsecretvaluetail-xyz")
    assert Redactor(["redacted"]).text("redacted") == MARKER  # a secret inside the marker: the whole string


def test_keys_are_blanked_and_two_keys_blanked_alike_both_stay() -> None:
    redactor = Redactor(["longsecretvalue"])
    schema = {
        "properties": {"longsecretvalue": {"type": "string"}, "LONGSECRETVALUE": {"type": "number"}},
        "required": ["longsecretvalue"],
        "enum": [1, True, None, 2.5],
    }
    assert redactor.value(schema) == {
        "properties": {MARKER: {"type": "string"}, f"{MARKER}#2": {"type": "number"}},
        "required": [MARKER],
        "enum": [1, True, None, 2.5],
    }


def test_a_listing_is_blanked_everywhere_the_server_speaks() -> None:
    spec = ServerSpec(name="s", source="x", transport="stdio", command="c", env={"KEY": KEY})
    listing = Listing(
        spec=spec,
        server_info={"name": f"srv-{KEY}", "version": KEY, "title": KEY, "websiteUrl": f"https://x/{KEY}"},
        instructions=f"use {KEY}",
        protocol_version="2025-06-18",
        tools=[
            {
                "name": f"t_{KEY}",
                "description": KEY,
                "inputSchema": {"type": "object", "properties": {KEY: {"default": KEY}}},
                "outputSchema": {"type": "object", "properties": {"r": {"description": KEY}}},
                "annotations": {"title": KEY},
                "_meta": {"k": [KEY]},
            }
        ],
        pages=1,
        seconds=0.1,
    )
    clean = redacted(listing, Redactor(spec.secrets()))
    assert KEY not in repr([clean.server_info, clean.instructions, clean.tools])
    assert clean.tools[0]["name"] == f"t_{MARKER}" and clean.instructions == f"use {MARKER}"


def test_a_failing_servers_reason_and_stderr_hold_no_secret(tmp_path) -> None:
    """A stdio server that prints its key to stderr and exits: the reason and the stderr tail are blanked."""
    script = tmp_path / "leak.py"
    script.write_text(
        "import os, sys\n"
        "sys.stderr.write('x' * 2000 + ' key=' + os.environ['KEY'] + ' and ' + sys.argv[1] + '\\n')\n"
        "sys.exit(3)\n"
    )
    arg_key = "ak_" + os.urandom(10).hex()
    spec = ServerSpec(
        name="leak",
        source="x",
        transport="stdio",
        command=sys.executable,
        args=(str(script), f"--api-key={arg_key}"),
        env={"KEY": KEY},
    )
    failure = anyio.run(list_one, spec, 20)
    assert not isinstance(failure, Listing)
    assert KEY not in failure.stderr_tail + failure.reason and arg_key not in failure.stderr_tail
    assert f"key={MARKER} and --api-key={MARKER}" in failure.stderr_tail


def test_the_stderr_tail_window_never_starts_inside_a_secret() -> None:
    redactor = Redactor([KEY])
    for before in range(0, 80, 7):  # the window of 4 * STDERR_TAIL + len(KEY) bytes starts anywhere around KEY
        text = "x" * before + (KEY + " ") * (4 * STDERR_TAIL // len(KEY)) + "end"
        with tempfile.TemporaryFile("w+b") as errlog:
            errlog.write(text.encode())
            errlog.flush()
            tail = stderr_tail(errlog.fileno(), redactor)
        assert tail.endswith("end") and len(tail) <= STDERR_TAIL
        assert not any(KEY[i : i + 5] in tail for i in range(len(KEY) - 4)), tail


# --- the property: whatever the JSON, wherever the secrets, none survive; without secrets, nothing changes ---

_SECRET_CHARS = st.characters(min_codepoint=33, max_codepoint=126)  # printable ASCII, punctuation included
LONG = st.text(_SECRET_CHARS, min_size=8, max_size=24)
SHORT = st.text(st.characters(whitelist_categories=("Ll", "Lu", "Nd")), min_size=4, max_size=7)


def _whole_word(secret: str) -> re.Pattern:
    return re.compile(rf"(?<![^\W_]){re.escape(secret)}(?![^\W_])", re.IGNORECASE)


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in [key, *_strings(item)]]
    return []


@st.composite
def documents_with_secrets(draw):
    longs = draw(st.lists(LONG, min_size=1, max_size=3))
    shorts = draw(st.lists(SHORT, max_size=2))
    assume(not any(s.lower() in MARKER or MARKER[1:-1] in s.lower() for s in longs + shorts))
    piece = st.one_of(
        st.text(max_size=6),
        st.sampled_from(longs),
        st.sampled_from(longs).map(str.swapcase),
        *([st.sampled_from(shorts).map(lambda s: f" {s}.")] if shorts else []),
    )
    string = st.lists(piece, max_size=5).map("".join)
    document = draw(
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | string,
            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(string, inner, max_size=4),
            max_leaves=25,
        )
    )
    return document, longs, shorts


@given(documents_with_secrets())
def test_no_secret_survives_anywhere_in_any_document(case) -> None:
    document, longs, shorts = case
    clean = Redactor(longs + shorts).value(document)
    for text in _strings(clean):
        for secret in longs:
            assert secret.lower() not in text.lower(), (secret, text)
        for secret in shorts:
            assert not _whole_word(secret).search(text), (secret, text)


@given(documents_with_secrets())
def test_a_document_without_the_secrets_is_unchanged(case) -> None:
    document, longs, shorts = case
    texts = _strings(document)
    assume(not any(s.lower() in t.lower() for s in longs for t in texts))
    assume(not any(_whole_word(s).search(t) for s in shorts for t in texts))
    assert Redactor(longs + shorts).value(document) == document
    assert Redactor([]).value(document) == document
