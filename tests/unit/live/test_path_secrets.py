"""Keys in URL paths (hosted MCP servers' ``.../s/KEY/mcp``): found by shape or position, never by host, and
kept out of the address as shown and of the server id; ordinary paths are left alone."""

from __future__ import annotations

import re
import string
from urllib.parse import urlsplit

from hypothesis import assume, given
from hypothesis import strategies as st

from toolkg.live.redaction import MARKER, secret_path_segments, secret_values
from toolkg.live.sources import address_name, as_parameter, parse_address, public_url

KEYS = st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=8, max_size=64)
HOSTS = st.sampled_from(["mcp.example.com", "server.smithery.ai", "127.0.0.1:8080", "[::1]:9000"])
MARKERS = st.sampled_from(["s", "key", "keys", "token", "api-key", "api_key", "secret", "access-token"])
PLAIN = st.sampled_from(["mcp", "sse", "v1", "api", "servers", "github", "2025-06-18"])


@given(host=HOSTS, marker=MARKERS, key=KEYS, before=st.lists(PLAIN, max_size=2), after=st.lists(PLAIN, max_size=2))
def test_a_segment_after_a_key_marker_is_blanked_everywhere(host, marker, key, before, after):
    assume(not re.fullmatch(r"(api[-_]?|access[-_]?)?(keys?|tokens?|secrets?)|credentials?", key, re.I))
    path = "/".join(["", *before, marker, key, *after])
    url = f"https://{host}{path}"
    shown = public_url(url)
    assert f"/{marker}/{MARKER}" in shown and key not in shown.split("/")[3:]
    assert address_name(url) == "-".join([urlsplit(url).hostname or "", *before, marker, *after])
    assert key in secret_values(url=url)
    assert not isinstance(as_parameter(url), str)  # a hidden flow parameter


@given(host=HOSTS, segments=st.lists(PLAIN, max_size=4))
def test_ordinary_paths_are_kept_as_they_are(host, segments):
    url = f"https://{host}/" + "/".join(segments)
    assert MARKER not in public_url(url) and secret_path_segments(urlsplit(url).path) == []
    assert isinstance(as_parameter(url), str)


def test_keys_are_found_by_their_shape_wherever_they_stand():
    for key in ("sk-live-abc123", "ghp_" + "a1" * 10, "3f9c2b7e1d4a8f6051c2e9b7", "a8F3kQ9zL2xV7mN4"):
        assert secret_path_segments(f"/{key}/mcp") == [key], key
    for word in ("modelcontextprotocol", "release-2024", "server-everything", "mcp"):
        assert secret_path_segments(f"/{word}/mcp") == [], word


def test_an_address_server_id_is_its_host_and_its_path_without_the_key():
    spec = parse_address("https://mcp.example.com/s/0123456789abcdef0123/mcp")
    assert spec.name == "mcp.example.com-s-mcp" and "0123456789abcdef0123" not in spec.id
    assert spec.public()["url"] == f"https://mcp.example.com/s/{MARKER}/mcp"
    assert parse_address("https://mcp.example.com/mcp").name == "mcp.example.com-mcp"  # as before
