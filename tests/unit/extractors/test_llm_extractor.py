"""The LLM extractor over real HTTP: openai + instructor against a fake OpenAI-compatible server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import CASES
from tests.support.fake_openai import FakeOpenAI, Reply, always_valid, completion, invalid_triples, tool_in_prompt
from toolkg.errors import ConfigError
from toolkg.extractors.triples.llm import LLMExtractor
from toolkg.extractors.triples.models import ExtractionFailure, ToolExtraction
from toolkg.llm.config import LLMConfig, load_llm_config
from toolkg.models import Parameter, Server, Tool

SECRET = "sk-toolkg-test-SECRET-4f9c2e"
CATALOG = [CASES / "openai_tools.json", CASES / "mcp_bing.json"]  # 2 manifests, 4 tools (2 described in Chinese)
TOOL = Tool(
    server_id="shop", name="get_widget", description="Gets a widget.", parameters=(Parameter(name="widget_id"),)
)
SERVER = Server(id="shop", name="shop", category="Retail")


def _extractor(fake: FakeOpenAI, tmp_path: Path, **config) -> LLMExtractor:
    settings = {"base_url": fake.base_url, "model": "fake-model", "api_key": SECRET, "timeout": 5, **config}
    return LLMExtractor(LLMConfig(**settings), tmp_path / "cache.sqlite")


def test_invalid_reply_is_reasked_then_accepted(tmp_path):
    def script(request, n):
        return Reply(body=completion(request, invalid_triples(request))) if n == 1 else always_valid(request, n)

    with FakeOpenAI(script) as fake:
        extractor = _extractor(fake, tmp_path)
        (result,) = extractor.extract_many([(TOOL, SERVER)], "run-1")
    assert isinstance(result, ToolExtraction) and len(fake.requests) == 2
    assert extractor.usage().reasks == 1
    reask = json.dumps(fake.requests[1].body["messages"])
    assert "hasEntity goes from Tool to BusinessObject" in reask  # the validator's message went back to the model


@pytest.mark.slow
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
    assert extractor.usage().retries == 1


@pytest.mark.slow
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
    assert len(fake.requests) == 3 and extractor.usage().retries == 2


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
    failures = [r for r in results if isinstance(r, ExtractionFailure)]  # all of them, as just asserted
    assert failures[0].reason.startswith("cannot reach the LLM endpoint")
    assert failures[-1].reason.startswith("skipped: the LLM endpoint failed 2 times in a row")


def test_rejected_credentials_stop_the_build_with_one_line(tmp_path):
    def script(request, n):
        return Reply(status=401, body={"error": {"message": "invalid api key"}})

    with FakeOpenAI(script) as fake:
        extractor = _extractor(fake, tmp_path)
        with pytest.raises(ConfigError, match=r"^LLM endpoint refused the request \(401\): invalid api key$"):
            extractor.extract_many([(TOOL, SERVER)], "run-1")


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
    assert isinstance(result, ToolExtraction), result
    assert {(t.relation, t.tail) for t in result.triples} == {("usedBy", "Sales"), ("hasEntity", "widget")}
    usage = extractor.usage()
    assert usage.reasks == 1 and usage.predicates_unmapped == {"is married to": 1}
    assert usage.predicates_mapped == {"works_for -> usedBy (synonym)": 1, "acts on -> hasEntity (synonym)": 1}
    assert "is not in the ontology" in json.dumps(fake.requests[1].body["messages"])
