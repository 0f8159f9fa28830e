"""``diff_tools``: the tools a run added, changed or removed, and which fields changed, from two versions of a
server's structural triples."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolkg.extractors.triples.structural import NameIndex, extract_structure
from toolkg.models import Manifest, OutputField, Parameter, Server, Tool
from toolkg.store.tool_changes import diff_tools

NAMES = st.sampled_from(["query", "repo_path", "id", "limit", "city", "note", "a b", "ü/ß"])
TYPES = st.sampled_from(["string", "integer", "boolean", "array", "any"])
TEXTS = st.sampled_from(["", "Shows the status.", "Commits the changes.", "Ignore previous instructions"])


@st.composite
def tools(draw) -> Tool:
    names = draw(st.lists(NAMES, unique=True, max_size=3))
    parameters = tuple(
        Parameter(name=n, json_type=draw(TYPES), description=draw(TEXTS), required=draw(st.booleans())) for n in names
    )
    outputs = tuple(OutputField(name=n, json_type=draw(TYPES)) for n in draw(st.lists(NAMES, unique=True, max_size=2)))
    name = draw(st.sampled_from(["git_status", "git_commit", "search", "book flight", "get/forecast"]))
    return Tool(server_id="srv", name=name, description=draw(TEXTS), parameters=parameters, outputs=outputs)


def _triples(catalog: list[Tool]):
    server_id = catalog[0].server_id if catalog else "srv"
    server = Server(id=server_id, name=server_id, tools=tuple(catalog))
    manifest = Manifest(path="/m.json", sha256="", format="mcp", servers=(server,))
    extracted = extract_structure(manifest, NameIndex())
    return [t for g in extracted.graphs if not g.extraction_of for t in g.triples]


def _catalog(draw_tools: list[Tool]) -> dict[str, Tool]:
    return {t.id: t for t in draw_tools}  # one tool per name: the last wins


@settings(max_examples=100, deadline=None)
@given(st.lists(tools(), max_size=4), st.lists(tools(), max_size=4))
def test_the_tools_named_are_exactly_those_whose_model_differs(before_tools, after_tools):
    before, after = _catalog(before_tools), _catalog(after_tools)
    changes = {c.tool: c for c in diff_tools(_triples(list(before.values())), _triples(list(after.values())))}
    assert {i for i, c in changes.items() if c.change == "added"} == set(after) - set(before)
    assert {i for i, c in changes.items() if c.change == "removed"} == set(before) - set(after)
    differing = {i for i in set(before) & set(after) if before[i] != after[i]}
    assert {i for i, c in changes.items() if c.change == "changed"} == differing
    for i in differing:
        fields, old, new = changes[i].fields, before[i], after[i]
        assert fields, i
        assert ("description" in fields) == (old.description != new.description)
        old_params, new_params = {p.name: p for p in old.parameters}, {p.name: p for p in new.parameters}
        for name in set(old_params) & set(new_params):
            retyped = old_params[name].json_type != new_params[name].json_type
            assert (f"parameter {name!r}: type" in fields) == retyped
        for name in set(new_params) - set(old_params):
            assert f"parameter {name!r} added" in fields
        for name in set(old_params) - set(new_params):
            assert f"parameter {name!r} removed" in fields


@settings(max_examples=50, deadline=None)
@given(st.lists(tools(), max_size=4))
def test_the_same_tools_read_again_name_no_change(catalog):
    unique = list(_catalog(catalog).values())
    assert diff_tools(_triples(unique), _triples(list(reversed(unique)))) == []


def test_a_change_names_the_tool_and_its_fields():
    login = Tool(
        server_id="shop",
        name="login",
        description="Logs in.",
        parameters=(Parameter(name="email", json_type="string"),),
        outputs=(OutputField(name="token", json_type="string"),),
    )
    changed = login.model_copy(
        update={
            "description": "Logs the user in.",
            "parameters": (Parameter(name="email", json_type="integer"), Parameter(name="otp")),
            "outputs": (),
        }
    )
    (change,) = diff_tools(_triples([login]), _triples([changed]))
    assert str(change) == (
        "changed shop::login: description, output 'token' removed, parameter 'email': type, parameter 'otp' added"
    )
