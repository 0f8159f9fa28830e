"""The LLM extractor inside an in-process build, against a fake OpenAI-compatible server over real HTTP."""

from __future__ import annotations

import json

import pytest

from tests.conftest import CASES
from tests.support.fake_openai import FakeOpenAI, Reply, always_valid, completion, invalid_triples, tool_in_prompt
from toolkg.prompts import DEFAULT_PROMPT
from toolkg.store.oxigraph_store import ToolStore

SECRET = "sk-toolkg-test-SECRET-4f9c2e"


CATALOG = [CASES / "openai_tools.json", CASES / "mcp_bing.json"]  # 2 manifests, 4 tools (2 described in Chinese)


@pytest.fixture
def llm_env(monkeypatch):
    """Point the build's LLM extractor at a fake server through the environment, like a user would."""

    def configure(fake: FakeOpenAI, **extra: str) -> None:
        monkeypatch.setenv("TOOLKG_LLM_BASE_URL", fake.base_url)
        monkeypatch.setenv("TOOLKG_LLM_MODEL", "fake-model")
        monkeypatch.setenv("TOOLKG_LLM_API_KEY", SECRET)
        monkeypatch.setenv("TOOLKG_LLM_TIMEOUT", "5")
        for name, value in extra.items():
            monkeypatch.setenv(name, value)

    return configure


@pytest.mark.slow
def test_valid_extraction_lands_in_the_store_with_provenance(build, store_dir, llm_env):
    with FakeOpenAI() as fake:
        llm_env(fake)
        summary = build(CATALOG, store_dir, extractor="llm")
    assert summary.exit_code == 0 and len(fake.requests) == 4
    assert summary.extraction.tools == 4 and summary.extraction.http_requests == 4
    assert summary.extraction.prompt_tokens == 400 and summary.extraction.completion_tokens == 80
    store = ToolStore(store_dir)
    rows = store.select("""SELECT ?tool ?department ?model ?prompt ?hash ?manifest ?run WHERE {
        GRAPH ?g { ?tool tk:usedBy ?d . ?d rdfs:label ?department .
                   ?g tk:extractionOf ?tool ; tk:model ?model ; tk:promptId ?prompt ; tk:promptHash ?hash ;
                      prov:wasDerivedFrom ?manifest ; prov:wasGeneratedBy ?run } }""")
    assert len(rows) == 4
    assert {r["department"].value for r in rows} == {"sales"}
    assert {(r["model"].value, r["prompt"].value) for r in rows} == {("fake-model", "tool-triples")}
    assert all(len(r["hash"].value) == 64 and r["run"].value.endswith(summary.run_id) for r in rows)
    # the surface form the model wrote is kept as an alternative label of the canonical entity
    (entity,) = store.select(
        'SELECT DISTINCT ?e WHERE { ?e a tk:BusinessObject ; rdfs:label "widget" ; skos:altLabel "Widgets" }'
    )
    assert entity["e"].value.endswith("/entity/business-object/widget")
    # the request was a tool call for the ontology-generated response model
    request = fake.requests[0].body
    assert request["model"] == "fake-model" and request["tools"][0]["function"]["name"] == "ToolTriples"
    assert "hasEntity" in json.dumps(request["tools"][0]["function"]["parameters"])


@pytest.mark.slow
def test_reply_that_stays_invalid_quarantines_that_tool_and_the_run_finishes(build, store_dir, llm_env):
    def script(request, n):
        if tool_in_prompt(request)["name"] == "bing_search":
            return Reply(body=completion(request, invalid_triples(request)))
        return always_valid(request, n)

    with FakeOpenAI(script) as fake:
        llm_env(fake, TOOLKG_LLM_MAX_REASKS="1")
        summary = build(CATALOG, store_dir, extractor="llm")
    assert summary.exit_code == 3 and summary.totals["tools"] == 4  # the tool still loads, structurally
    (item,) = summary.quarantined
    assert item.stage == "extract" and item.item.endswith("::bing_search")
    assert item.reason == (  # the last reply's validation error, where it is: not instructor's dump of attempts
        "LLM reply still invalid after 2 attempts: triples.0: hasEntity goes from Tool to BusinessObject; "
        "got Tool -> Department ('bing_search' -> 'Sales')"
    )
    assert json.loads(item.raw)["triples"][0]["tail_type"] == "Department"  # the raw reply is kept
    store = ToolStore(store_dir)
    assert len(store.select("SELECT ?g WHERE { ?g a tk:Extraction }")) == 3
    store.close()

    # The next run retries only that tool: the other three come from the cache.
    with FakeOpenAI() as fixed:
        llm_env(fixed)
        again = build(CATALOG, store_dir, extractor="llm")
    assert again.exit_code == 0 and again.reprocessed and len(fixed.requests) == 1
    assert again.extraction.cache_hits == 1  # its sibling in the same manifest
    assert len(ToolStore(store_dir).select("SELECT ?g WHERE { ?g a tk:Extraction }")) == 4


@pytest.mark.slow
def test_rerun_makes_no_http_calls_and_a_new_prompt_re_extracts(build, store_dir, llm_env, tmp_path):
    with FakeOpenAI() as fake:
        llm_env(fake)
        build(CATALOG, store_dir, extractor="llm")
        assert len(fake.requests) == 4
        unchanged = build(CATALOG, store_dir, extractor="llm")
        assert unchanged.skipped and len(fake.requests) == 4
        forced = build(CATALOG, store_dir, extractor="llm", force=True)  # rebuilt, but from the cache
        assert forced.extraction.cache_hits == 4 and len(fake.requests) == 4

        prompt = tmp_path / "my_prompt.md"
        prompt.write_text(DEFAULT_PROMPT.read_text() + "\nBe brief.\n")
        llm_env(fake, TOOLKG_LLM_PROMPT=str(prompt))
        changed = build(CATALOG, store_dir, extractor="llm")
    assert len(changed.rebuilt) == 2 and len(fake.requests) == 8  # every tool that prompt covers, once
    hashes = ToolStore(store_dir).select("SELECT DISTINCT ?h WHERE { ?g tk:promptHash ?h }")
    assert len(hashes) == 1
