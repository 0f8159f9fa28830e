"""Names as typed (toolkg.toolsearch.names): every form a client writes a tool's name in finds that tool."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from toolkg.toolsearch.names import NameIndex, name_key

# MCP tool names: letters, digits, '_' and '-' (the spec's pattern); server ids as toolkg writes them
TOOL_NAMES = st.from_regex(r"[A-Za-z][A-Za-z0-9_\-]{0,24}", fullmatch=True)
SERVERS = st.from_regex(r"[a-z][a-z0-9\-]{0,12}", fullmatch=True)


@st.composite
def catalogs(draw) -> list[tuple[str, str, str]]:
    servers = draw(st.lists(SERVERS, min_size=1, max_size=4, unique=True))
    pairs = draw(st.lists(st.tuples(st.sampled_from(servers), TOOL_NAMES), min_size=1, max_size=25, unique=True))
    return [(f"{server}::{name}", server, name) for server, name in pairs]


def _index(tools):
    return NameIndex(tools, [(server, server.replace("-", " ").title()) for _, server, _ in tools])


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(catalogs(), st.data())
def test_every_exact_form_finds_the_tool(tools, data) -> None:
    index = _index(tools)
    tool_id, server, name = data.draw(st.sampled_from(tools))
    assert index.lookup(tool_id) == [tool_id]
    assert tool_id in index.lookup(name)
    assert tool_id in index.lookup(f"select:{name}")
    for prefixed in (f"mcp__{server}__{name}", f"{server}__{name}"):
        assert tool_id in (index.lookup(prefixed) or []), prefixed
    # a select: list keeps the order given
    other_id, _, _ = data.draw(st.sampled_from(tools))
    assert index.lookup(f"select:{other_id}, {tool_id}")[0] == other_id


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(catalogs(), st.data())
def test_near_misses_of_a_name_find_it(tools, data) -> None:
    index = _index(tools)
    tool_id, _, name = data.draw(st.sampled_from(tools))
    assume(name_key(name))
    for variant in (name.upper(), name.lower(), re.sub(r"[_\-]", ".", name), name.replace("_", " ")):
        if variant not in index.by_name:  # another tool's exact name wins, as it should
            assert tool_id in (index.lookup(variant) or []), variant
    if len(name_key(name)) >= 6:
        dropped = name[:2] + name[3:]  # one letter missed
        if name_key(dropped) not in index.by_key and dropped not in index.by_name:
            assert tool_id in (index.lookup(dropped) or []), dropped


def test_a_sentence_is_not_a_name_and_an_unknown_server_finds_nothing() -> None:
    index = _index([("time::get_current_time", "time", "get_current_time"), ("fs::read_file", "fs", "read_file")])
    assert index.lookup("what is the current time in Paris") is None
    assert index.lookup("please read the file at /tmp/x") is None
    assert index.lookup("mcp__weather__get_current_time") is None  # no server 'weather'
    assert index.lookup("mcp__fs__get_current_time") is None  # the tool is not on that server
    assert index.lookup("read") is None  # too short for a typo to say which name was meant
    assert index.lookup("Get Current Time") == ["time::get_current_time"]  # spaces for separators
    assert index.lookup("select:nothing,read_file") == ["fs::read_file"]


def test_a_bare_name_several_servers_share_returns_them_all_and_a_prefix_picks_one() -> None:
    tools = [("a::search", "a", "search"), ("b::search", "b", "search"), ("b::fetch", "b", "fetch")]
    index = NameIndex(tools, [("a", "Alpha Search"), ("b", "Beta")])
    assert index.lookup("search") == ["a::search", "b::search"]
    assert index.lookup("mcp__b__search") == ["b::search"]
    assert index.lookup("mcp__alpha_search__search") == ["a::search"]  # the server's display name
    assert index.lookup("beta:search") == ["b::search"]
