"""The offline extractor: golden triples for real tools of both sample catalogs, other scripts, the store."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from tests.conftest import DATA
from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.reading import fingerprint_file
from toolkg.extractors.triples.models import response_model
from toolkg.extractors.triples.offline import OfflineExtractor
from toolkg.models import Server, Tool
from toolkg.text.words import dominant_script

CATALOGS = (
    DATA / "livemcpbench" / "tools.json",
    DATA / "toollinkos" / "core_tools.json",
    DATA / "toollinkos" / "regular_tools.json",
)


@cache
def _tools() -> dict[str, tuple[Tool, Server]]:
    found = {}
    for path in CATALOGS:
        file, data = fingerprint_file(Path(path))
        for server in ingest_manifest(file, data).parsed.servers:
            for tool in server.tools:
                found[tool.id] = (tool, server)
    return found


def _facts(tool_id: str) -> set[tuple[str, str, str]]:
    tool, server = _tools()[tool_id]
    result = OfflineExtractor().extract(tool, server)
    return {(t.head if t.head_type == "Parameter" else "", t.relation, t.tail) for t in result.triples}


GOLDEN = {
    "yahoo-finance::get_historical_stock_prices": {
        ("", "hasCapability", "read"),
        ("", "hasEntity", "historical stock price"),
        ("", "hasEntity", "stock symbol"),
        ("", "hasEntity", "symbol"),
        ("", "hasEntity", "period"),
        ("", "hasEntity", "interval"),
        ("symbol", "refersTo", "symbol"),
        ("period", "refersTo", "period"),
        ("interval", "refersTo", "interval"),
        ("", "yields", "price"),  # what a listing of prices carries
        ("symbol", "identifies", "symbol"),  # a symbol picked out of others; a period is made up
        ("", "hasLineOfBusiness", "Finance"),
    },
    "filesystem::list_directory": {
        ("", "hasCapability", "read"),
        ("", "hasEntity", "directory"),
        ("", "hasEntity", "path"),
        ("", "hasEntity", "detailed listing"),
        ("", "hasEntity", "file"),
        ("path", "refersTo", "path"),
        ("", "yields", "directory"),
        ("path", "identifies", "path"),
        ("", "hasLineOfBusiness", "File Access"),
    },
    "regular_tools::share_location_via_email": {
        ("", "hasCapability", "send"),
        ("", "hasEntity", "location"),
        ("", "hasEntity", "email address"),
        ("", "hasEntity", "geographical location"),
        ("email_address", "refersTo", "email address"),
        ("location", "refersTo", "location"),
        ("email_address", "identifies", "email"),
    },
    "regular_tools::frontier_user_login": {  # a trailing verb; "logs ... into" in the description
        ("", "hasCapability", "authenticate"),
        ("", "hasEntity", "frontier user"),
        ("", "hasEntity", "frontier account"),
        ("", "hasEntity", "user"),
        ("", "hasEntity", "email"),
        ("", "hasEntity", "password"),
        ("", "hasEntity", "language"),
        ("email", "refersTo", "email"),
        ("password", "refersTo", "password"),
        ("language", "refersTo", "language"),
        ("", "yields", "user"),
    },
    "core_tools::get_current_location": {
        ("", "hasCapability", "read"),
        ("", "hasEntity", "location"),
        ("", "hasEntity", "geographical location"),
        ("", "hasEntity", "latitude"),
        ("", "hasEntity", "longitude"),
        ("", "yields", "location"),
    },
}


@pytest.mark.parametrize("tool_id", sorted(GOLDEN))
def test_golden_triples(tool_id):
    assert _facts(tool_id) == GOLDEN[tool_id]


def test_chinese_description_keeps_names_and_types_only():
    tool, server = _tools()["bing-cn-mcp::bing_search"]
    assert dominant_script(tool.description) == "CJK"
    result = OfflineExtractor().extract(tool, server)
    assert {(t.relation, t.tail) for t in result.triples} == {
        ("hasCapability", "search"),  # from the name: bing_search
        ("hasEntity", "bing"),
        ("yields", "bing"),  # a search of its name's object (the name cannot say it is the engine)
        ("hasLineOfBusiness", "Discovery"),  # from the server's category
    }
    assert result.notes == ("description is not English (CJK script): entities come from names and types only",)


@pytest.mark.slow
def test_every_sample_tool_extracts_valid_english_triples_deterministically():
    tools = _tools()
    assert len(tools) == 527 + 573
    extractor = OfflineExtractor()
    other_script = 0
    for tool, server in tools.values():
        first, second = extractor.extract(tool, server), extractor.extract(tool, server)
        assert first == second  # deterministic
        assert first.triples or first.notes
        # valid against the ontology-generated model the LLM must satisfy too
        response_model().model_validate({"triples": [t.model_dump() for t in first.triples]})
        for t in first.triples:
            if t.tail_type == "BusinessObject":  # no garbage entities from text the rules cannot read
                assert dominant_script(t.tail) in ("LATIN", ""), (tool.id, t.tail)
        other_script += any("not English" in n for n in first.notes)
    assert other_script >= 60  # the Chinese LiveMCPBench descriptions are recognised


@pytest.mark.slow
def test_spacy_loads_without_torch_and_leaves_torch_importable():
    """toolkg does not install torch, but a user's environment may hold it: spaCy loads without importing it
    either way, and the guard that keeps thinc from importing it leaves no ``None`` entry behind (which
    would make a later ``import torch`` fail with "halted" where torch is installed)."""
    import subprocess
    import sys

    code = (
        "import importlib.util, sys\n"
        "from toolkg.text.words import nlp\n"
        "words = [t.text for t in nlp().make_doc('logs the user in')]\n"
        "left = 'torch' in sys.modules\n"
        "try:\n"
        "    import torch\n"
        "    works = torch.tensor([1]).item() == 1\n"
        "except ImportError as error:  # not installed: the ordinary error, not the guard's None\n"
        "    works = importlib.util.find_spec('torch') is None and 'halted' not in str(error)\n"
        "print(words, left, works)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "['logs', 'the', 'user', 'in'] False True"
