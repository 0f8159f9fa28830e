"""The LLM extractor over real HTTP: openai + instructor against a fake OpenAI-compatible server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import _PREFECT_HOME, CASES
from tests.fake_openai import FakeOpenAI, Reply, always_valid, completion, invalid_triples, tool_in_prompt
from toolkg.errors import ConfigError
from toolkg.extractors.triples.llm import LLMExtractor
from toolkg.extractors.triples.models import ExtractionFailure, ToolExtraction
from toolkg.llm.config import LLMConfig, load_llm_config
from toolkg.models import Parameter, Server, Tool
from toolkg.prompts import DEFAULT_PROMPT
from toolkg.store.oxigraph_store import ToolStore

SECRET = "sk-toolkg-test-SECRET-4f9c2e"
CATALOG = [CASES / "openai_tools.json", CASES / "mcp_bing.json"]  # 2 manifests, 4 tools (2 described in Chinese)
TOOL = Tool(
    server_id="shop", name="get_widget", description="Gets a widget.", parameters=(Parameter(name="widget_id"),)
)
SERVER = Server(id="shop", name="shop", category="Retail")


def _extractor(fake: FakeOpenAI, tmp_path: Path, **config) -> LLMExtractor:
    settings = {"base_url": fake.base_url, "model": "fake-model", "api_key": SECRET, "timeout": 5, **config}
    return LLMExtractor(LLMConfig(**settings), tmp_path / "cache.sqlite")


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


def test_valid_extraction_lands_in_the_store_with_provenance(build, store_dir, llm_env):
    with FakeOpenAI() as fake:
        llm_env(fake)
        summary = build(CATALOG, store_dir, extractor="llm")
    assert summary.exit_code == 0 and len(fake.requests) == 4
    assert summary.extraction["tools"] == 4 and summary.extraction["http_requests"] == 4
    assert summary.extraction["prompt_tokens"] == 400 and summary.extraction["completion_tokens"] == 80
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


def test_invalid_reply_is_reasked_then_accepted(tmp_path):
    def script(request, n):
        return Reply(body=completion(request, invalid_triples(request))) if n == 1 else always_valid(request, n)

    with FakeOpenAI(script) as fake:
        extractor = _extractor(fake, tmp_path)
        (result,) = extractor.extract_many([(TOOL, SERVER)], "run-1")
    assert isinstance(result, ToolExtraction) and len(fake.requests) == 2
    assert extractor.usage()["reasks"] == 1
    reask = json.dumps(fake.requests[1].body["messages"])
    assert "hasEntity goes from Tool to BusinessObject" in reask  # the validator's message went back to the model


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
    assert "still invalid after 2 attempts" in item.reason and "\n" not in item.reason
    assert json.loads(item.raw)["triples"][0]["tail_type"] == "Department"  # the raw reply is kept
    store = ToolStore(store_dir)
    assert len(store.select("SELECT ?g WHERE { ?g a tk:Extraction }")) == 3
    store.close()

    # The next run retries only that tool: the other three come from the cache.
    with FakeOpenAI() as fixed:
        llm_env(fixed)
        again = build(CATALOG, store_dir, extractor="llm")
    assert again.exit_code == 0 and again.reprocessed and len(fixed.requests) == 1
    assert again.extraction["cache_hits"] == 1  # its sibling in the same manifest
    assert len(ToolStore(store_dir).select("SELECT ?g WHERE { ?g a tk:Extraction }")) == 4


def test_rate_limit_retry_after_is_honoured(tmp_path):
    def script(request, n):
        if n == 1:
            return Reply(status=429, body={"error": {"message": "slow down"}}, headers={"retry-after": "1"})
        return always_valid(request, n)

    with FakeOpenAI(script) as fake:
        extractor = _extractor(fake, tmp_path)
        (result,) = extractor.extract_many([(TOOL, SERVER)], "run-1")
    assert isinstance(result, ToolExtraction)
    first, second = fake.requests
    assert second.at - first.at >= 1.0  # waited as long as the server asked
    assert extractor.usage()["retries"] == 1


def test_server_errors_and_timeouts_are_retried(tmp_path):
    def script(request, n):
        if n == 1:
            return Reply(status=500, body={"error": {"message": "overloaded"}})
        if n == 2:
            return Reply(body=completion(request, []), delay=2.0)  # slower than the client's timeout
        return always_valid(request, n)

    with FakeOpenAI(script) as fake:
        extractor = _extractor(fake, tmp_path, timeout=0.5)
        (result,) = extractor.extract_many([(TOOL, SERVER)], "run-1")
    assert isinstance(result, ToolExtraction) and len(result.triples) == 4
    assert len(fake.requests) == 3 and extractor.usage()["retries"] == 2


def test_persistent_server_errors_quarantine_with_one_line(tmp_path):
    def script(request, n):
        return Reply(status=503, body={"error": {"message": "down for\nmaintenance"}})

    with FakeOpenAI(script) as fake:
        extractor = _extractor(fake, tmp_path, max_retries=1)
        (result,) = extractor.extract_many([(TOOL, SERVER)], "run-1")
    assert isinstance(result, ExtractionFailure) and len(fake.requests) == 2
    assert result.reason == "LLM endpoint answered 503: down for maintenance (gave up after 2 attempts)"
    assert "maintenance" in result.raw


def test_unreachable_endpoint_trips_the_breaker(tmp_path):
    with FakeOpenAI() as fake:
        url = fake.base_url  # a port that was just released: nothing listens there any more
    config = LLMConfig(base_url=url, model="m", timeout=1, max_retries=0, breaker=2, max_concurrency=1)
    extractor = LLMExtractor(config, tmp_path / "cache.sqlite")
    tools = [(TOOL.model_copy(update={"name": f"t{i}"}), SERVER) for i in range(5)]
    results = extractor.extract_many(tools, "run-1")
    assert all(isinstance(r, ExtractionFailure) for r in results)
    assert results[0].reason.startswith("cannot reach the LLM endpoint")
    assert results[-1].reason.startswith("skipped: the LLM endpoint failed 2 times in a row")


def test_rejected_credentials_stop_the_build_with_one_line(tmp_path):
    def script(request, n):
        return Reply(status=401, body={"error": {"message": "invalid api key"}})

    with FakeOpenAI(script) as fake:
        extractor = _extractor(fake, tmp_path)
        with pytest.raises(ConfigError, match=r"^LLM endpoint refused the request \(401\): invalid api key$"):
            extractor.extract_many([(TOOL, SERVER)], "run-1")


def test_rerun_makes_no_http_calls_and_a_new_prompt_re_extracts(build, store_dir, llm_env, tmp_path):
    with FakeOpenAI() as fake:
        llm_env(fake)
        build(CATALOG, store_dir, extractor="llm")
        assert len(fake.requests) == 4
        unchanged = build(CATALOG, store_dir, extractor="llm")
        assert unchanged.skipped and len(fake.requests) == 4
        forced = build(CATALOG, store_dir, extractor="llm", force=True)  # rebuilt, but from the cache
        assert forced.extraction["cache_hits"] == 4 and len(fake.requests) == 4

        prompt = tmp_path / "my_prompt.md"
        prompt.write_text(DEFAULT_PROMPT.read_text() + "\nBe brief.\n")
        llm_env(fake, TOOLKG_LLM_PROMPT=str(prompt))
        changed = build(CATALOG, store_dir, extractor="llm")
    assert len(changed.changed) == 2 and len(fake.requests) == 8  # every tool that prompt covers, once
    hashes = ToolStore(store_dir).select("SELECT DISTINCT ?h WHERE { ?g tk:promptHash ?h }")
    assert len(hashes) == 1


def test_cli_llm_build_never_writes_the_api_key(cli, tmp_path):
    store = tmp_path / "store"
    with FakeOpenAI() as fake:
        config = tmp_path / "llm.toml"
        config.write_text(f'[llm]\nbase_url = "{fake.base_url}"\nmodel = "fake-model"\napi_key = "{SECRET}"\n')
        args = ("--store", str(store), "--extractor", "llm", "--llm-config", str(config))
        result = cli("build", *map(str, CATALOG), *args)
    assert result.returncode == 0, result.stderr
    assert "extraction: llm (fake-model, prompt tool-triples@1#" in result.stdout
    assert "4 tools extracted, 0 cache hits, 0 failed; 4 HTTP requests" in result.stdout
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in fake.requests)  # it was used...
    config.unlink()
    leaks = [
        str(path)
        for root in (store, Path(_PREFECT_HOME), tmp_path)
        for path in root.rglob("*")
        if path.is_file() and SECRET.encode() in path.read_bytes()
    ]
    assert leaks == []  # ...and written nowhere: store, cache, run summaries, Prefect's database
    assert SECRET not in result.stdout + result.stderr


def test_cli_llm_without_an_endpoint_fails_fast(cli, tmp_path, monkeypatch):
    for name in ("TOOLKG_LLM_BASE_URL", "OPENAI_BASE_URL", "TOOLKG_LLM_MODEL", "TOOLKG_LLM_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    result = cli("build", *map(str, CATALOG), "--store", str(tmp_path / "s"), "--extractor", "llm")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "toolkg: error: --extractor llm and --confirm-deps need an OpenAI-compatible endpoint: "
        "set TOOLKG_LLM_BASE_URL and TOOLKG_LLM_MODEL "
        "(or base_url, model under [llm] in a file given with --llm-config)"
    )
    assert not (tmp_path / "s").exists()


def test_config_file_and_environment(tmp_path):
    file = tmp_path / "llm.toml"
    file.write_text('[llm]\nbase_url = "http://127.0.0.1:11434/v1"\nmodel = "qwen2.5"\nmax_concurrency = 2\n')
    config = load_llm_config(file, environ={"TOOLKG_LLM_MODEL": "llama3.1", "TOOLKG_LLM_RPM": "30"})
    assert (config.base_url, config.model, config.max_concurrency, config.requests_per_minute) == (
        "http://127.0.0.1:11434/v1",
        "llama3.1",
        2,
        30.0,
    )
    assert SECRET not in repr(LLMConfig(api_key=SECRET))
    file.write_text("[llm]\nmax_concurrency = 0\n")
    with pytest.raises(ConfigError, match="max_concurrency: Input should be greater than or equal to 1"):
        load_llm_config(file, environ={})


def test_cache_file_holds_no_endpoint_or_key(tmp_path):
    with FakeOpenAI() as fake:
        extractor = _extractor(fake, tmp_path)
        extractor.extract_many([(TOOL, SERVER)], "run-1")
        extractor.close()
    data = (tmp_path / "cache.sqlite").read_bytes()
    assert SECRET.encode() not in data and b"127.0.0.1" not in data
    shutil.rmtree(tmp_path)


def test_free_text_relations_map_onto_the_ontology_and_unmappable_ones_are_reasked(tmp_path):
    def script(request, n):
        name = tool_in_prompt(request)["name"]
        if n == 1:
            triples = [
                {"head": name, "head_type": "Tool", "relation": "is married to", "tail": "x", "tail_type": "Department"}
            ]
        else:
            triples = [
                {
                    "head": name,
                    "head_type": "Tool",
                    "relation": "works_for",
                    "tail": "Sales",
                    "tail_type": "Department",
                },
                {
                    "head": name,
                    "head_type": "Tool",
                    "relation": "acts on",
                    "tail": "widget",
                    "tail_type": "BusinessObject",
                },
            ]
        return Reply(body=completion(request, triples))

    with FakeOpenAI(script) as fake:
        extractor = _extractor(fake, tmp_path)
        (result,) = extractor.extract_many([(TOOL, SERVER)], "run-1")
    assert {(t.relation, t.tail) for t in result.triples} == {("usedBy", "Sales"), ("hasEntity", "widget")}
    usage = extractor.usage()
    assert usage["reasks"] == 1 and usage["predicates_unmapped"] == {"is married to": 1}
    assert usage["predicates_mapped"] == {"works_for -> usedBy (synonym)": 1, "acts on -> hasEntity (synonym)": 1}
    assert "is not in the ontology" in json.dumps(fake.requests[1].body["messages"])
