"""Tool names in any Unicode, as honest catalogs have them: a non-BMP character (an emoji), quotes,
backslashes. Tool ids used to be written into SPARQL with ``json.dumps``, whose surrogate escapes for a
non-BMP character Oxigraph rejects, so one such tool stopped ``toolkg mcp`` at start, broke ``/search`` and
``toolkg approve`` (an internal error). Now every value goes into SPARQL as an escaped RDF term
(``toolkg.store.sparql_terms``); here each generated tool builds, ``toolkg approve`` accepts it, the
endpoint's ``/search`` finds it and ``toolkg mcp``'s ``get_tool`` returns it. A name with a line break is
refused with one line (quarantined) and the others are unharmed."""

from __future__ import annotations

import json
import subprocess
import tempfile
import urllib.parse
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import TOOLKG, build_in_process
from tests.support.endpoint_helpers import get, serving

pytestmark = pytest.mark.slow

# What each tool does: distinct topics, so /search for one finds that one first.
TOPICS = [
    "Converts an amount of money between two currencies at today's exchange rate.",
    "Reads the weather forecast for a city for the next seven days.",
    "Translates a paragraph of text from one language into another.",
    "Books a hotel room for the given dates and number of guests.",
]
# Any character a tool name may hold (not a control character or line break, which the build refuses)...
NAME_TEXT = st.text(st.characters(exclude_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=12)
# ... and, in every name, one of each kind that broke the SPARQL: beyond the BMP, a quote, a backslash.
NON_BMP = st.characters(min_codepoint=0x10000, exclude_categories=("Cs", "Cn", "Co"))
QUOTES = st.sampled_from(['"', "'", '\\"', "\\", "\\u0041", '"""', "\\U0001F600"])


@st.composite
def names(draw) -> list[str]:
    return [f"t{i} {draw(NAME_TEXT)}{draw(NON_BMP)}{draw(QUOTES)}{draw(NAME_TEXT)}" for i in range(len(TOPICS))]


def _manifest(folder: Path, tool_names: list[str]) -> Path:
    tools = [
        {
            "name": name,
            "description": f'{topic}\nSays "it works" \\ or not 🚀.',
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string", "description": name}}},
        }
        for name, topic in zip(tool_names, TOPICS, strict=True)
    ]
    tools.append({"name": "broken\nname", "description": "Has a line break in its name.", "inputSchema": {}})
    path = folder / "unicode.json"
    path.write_text(json.dumps({"server": "uni", "tools": tools}))  # ASCII JSON: \ud83d escapes, as catalogs have
    return path


def _get_tools(store: Path, ids: list[str]) -> list[dict]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    server = StdioServerParameters(command=str(TOOLKG), args=["mcp", "--store", str(store)])

    async def run():
        async with Client(server, mode="legacy") as client:
            answers = []
            for tool_id in ids:
                answer = await client.call_tool("get_tool", {"id": tool_id})
                assert not answer.is_error, f"get_tool {tool_id!r}: {answer.content}"
                answers.append(answer.structured_content)
            return answers

    return anyio.run(run)


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(tool_names=names())
def test_a_tool_with_any_unicode_name_builds_is_found_and_can_be_approved(tool_names: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="unicode-names-") as folder:
        store = Path(folder) / "store"
        summary = build_in_process([_manifest(Path(folder), tool_names)], store, links=False)
        ids = [f"uni::{name.strip()}" for name in tool_names]
        (quarantined,) = summary.quarantined
        assert "control character (U+000A)" in quarantined.reason and "\n" not in quarantined.reason

        approved = subprocess.run(
            [str(TOOLKG), "approve", *ids, "--store", str(store), "--json"], capture_output=True, text=True, timeout=120
        )
        assert approved.returncode == 0, approved.stderr
        assert [entry["tool"] for entry in json.loads(approved.stdout)] == ids

        with serving(store) as base:
            for tool_id, topic in zip(ids, TOPICS, strict=True):
                found = get(base + "/search?" + urllib.parse.urlencode({"q": topic, "k": 2}))
                assert found["tools"][0]["id"] == tool_id, (tool_id, found)

        for tool_id, answer in zip(ids, _get_tools(store, ids), strict=True):
            assert answer["id"] == tool_id and answer["name"] == tool_id.removeprefix("uni::"), answer
