"""The structured-output probe over real HTTP: the client asks the server what it honours, once, and
extracts in that mode; the ontology's rules still decide what is kept (fake OpenAI-compatible server)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tests.support import fake_openai
from tests.support.fake_openai import (
    FakeOpenAI,
    Reply,
    always_valid,
    completion,
    honour_probe,
    probe_kind,
    text_completion,
)
from toolkg.errors import ConfigError
from toolkg.extractors.triples.llm import LLMExtractor
from toolkg.extractors.triples.models import (
    ExtractionFailure,
    ToolContext,
    ToolExtraction,
    decoding_model,
    response_model,
    to_extracted,
)
from toolkg.llm.config import LLMConfig
from toolkg.models import Parameter, Server, Tool
from toolkg.ontology.schema import extraction_schema

TOOL = Tool(
    server_id="shop", name="get_widget", description="Gets a widget.", parameters=(Parameter(name="widget_id"),)
)
SERVER = Server(id="shop", name="shop", category="Retail")
KINDS = ("json_schema", "tools", "json_object")


def _extractor(fake: FakeOpenAI, tmp_path: Path, **config) -> LLMExtractor:
    settings = {"base_url": fake.base_url, "model": "fake-model", "timeout": 5, **config}
    return LLMExtractor(LLMConfig(**settings), tmp_path / "cache.sqlite")


def _expected(offers: tuple[str, ...]) -> str:
    return next((kind for kind in KINDS if kind in offers), "md_json")


@pytest.mark.slow
@pytest.mark.parametrize(
    "offers", [combo for size in range(4) for combo in itertools.combinations(KINDS, size)], ids=str
)
def test_the_first_structured_output_the_server_honours_is_used(tmp_path, offers):
    with FakeOpenAI(offers=offers) as fake:
        extractor = _extractor(fake, tmp_path)
        (result,) = extractor.extract_many([(TOOL, SERVER)], "run-1")
    mode = _expected(offers)
    assert isinstance(result, ToolExtraction) and len(result.triples) == 4, result
    usage = extractor.usage()
    assert usage.structured_output == mode
    # probed in order until one was honoured; the probes are counted apart from the extraction's requests
    tried = [probe_kind(p.body) for p in fake.probes]
    assert tried == list(KINDS[: KINDS.index(mode) + 1] if mode != "md_json" else KINDS)
    assert usage.probes == len(tried) and usage.http_requests == len(fake.requests) == 1
    (request,) = [r.body for r in fake.requests]
    assert ("tools" in request) == (mode == "tools")
    expected_format = {"json_schema": "json_schema", "json_object": "json_object"}.get(mode)
    assert (request.get("response_format") or {}).get("type") == expected_format
    if mode == "json_schema":  # the ontology's rules reach the server's constrained decoder: the tool-centred lists
        wanted = request["response_format"]["json_schema"]["schema"]["properties"]
        assert wanted["hasEntity"]["items"]["maxLength"] == 80 and "hasParameter" not in wanted
        assert wanted["refersTo"]["items"]["properties"]["parameter"]["enum"] == ["widget_id"]  # this tool's own
    elif mode == "tools":  # read by the model with its prompt: the compact schema
        assert "$defs" in json.dumps(request["tools"][0]["function"]["parameters"])


def test_a_server_that_accepts_a_schema_and_ignores_it_is_not_believed(tmp_path):
    def ignores_schemas(request: dict) -> Reply:
        if probe_kind(request) == "json_schema":
            return Reply(body=text_completion(request, "Hello! How can I help you today?"))
        return honour_probe(request)

    with FakeOpenAI(probe_script=ignores_schemas) as fake:
        extractor = _extractor(fake, tmp_path)
        (result,) = extractor.extract_many([(TOOL, SERVER)], "run-1")
    assert isinstance(result, ToolExtraction)
    assert extractor.llm.probe is not None and extractor.llm.probe.name == "tools"
    assert "json_schema accepted but not followed" in extractor.llm.probe.evidence


def test_an_invalid_schema_shaped_reply_is_reasked_with_the_ontology_rule(tmp_path):
    # what a decoder held to the schema can still get wrong: a parameter the tool does not have
    wrong = [
        {
            "head": "colour",
            "head_type": "Parameter",
            "relation": "refersTo",
            "tail": "paint",
            "tail_type": "BusinessObject",
        }
    ]

    def script(request, n):
        return Reply(body=completion(request, wrong)) if n == 1 else always_valid(request, n)

    with FakeOpenAI(script, offers=("json_schema",)) as fake:
        extractor = _extractor(fake, tmp_path)
        (result,) = extractor.extract_many([(TOOL, SERVER)], "run-1")
    assert isinstance(result, ToolExtraction) and len(fake.requests) == 2
    assert extractor.usage().reasks == 1
    assert "'colour' is not a parameter of 'get_widget'" in json.dumps(fake.requests[1].body["messages"])


def test_the_probe_runs_once_for_many_tools_and_not_at_all_when_everything_is_cached(tmp_path):
    tools = [(TOOL.model_copy(update={"name": f"get_widget_{i}"}), SERVER) for i in range(6)]
    with FakeOpenAI(offers=("json_schema",)) as fake:
        first = _extractor(fake, tmp_path, max_concurrency=4)
        assert all(isinstance(r, ToolExtraction) for r in first.extract_many(tools, "run-1"))
        first.close()
        assert len(fake.probes) == 1 and len(fake.requests) == 6
        again = _extractor(fake, tmp_path)
        assert all(isinstance(r, ToolExtraction) for r in again.extract_many(tools, "run-2"))
    assert len(fake.probes) == 1 and len(fake.requests) == 6  # the rerun asked nothing, not even the probe
    assert again.usage().structured_output == "" and again.usage().cache_hits == 6


def test_probe_tokens_are_the_servers_own_and_counted(tmp_path):
    def with_usage(request: dict) -> Reply:
        reply = honour_probe(request)
        reply.body["usage"] = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
        return reply

    with FakeOpenAI(offers=("json_schema",), probe_script=with_usage) as fake:
        extractor = _extractor(fake, tmp_path)
        extractor.extract_many([(TOOL, SERVER)], "run-1")
    usage = extractor.usage()
    assert (usage.prompt_tokens, usage.completion_tokens) == (100 + 7, 20 + 3)


@pytest.mark.slow
def test_a_busy_server_during_the_probe_is_retried_and_rejected_credentials_stop(tmp_path):
    calls = []

    def busy_once(request: dict) -> Reply:
        calls.append(probe_kind(request))
        if len(calls) == 1:
            return Reply(status=503, body={"error": {"message": "loading model"}})
        return honour_probe(request)

    with FakeOpenAI(offers=("json_schema",), probe_script=busy_once) as fake:
        extractor = _extractor(fake, tmp_path)
        (result,) = extractor.extract_many([(TOOL, SERVER)], "run-1")
    assert isinstance(result, ToolExtraction) and calls == ["json_schema", "json_schema"]
    assert extractor.llm.probe is not None  # the probe ran
    assert extractor.usage().retries == 1 and extractor.llm.probe.name == "json_schema"

    def refuses(request: dict) -> Reply:
        return Reply(status=401, body={"error": {"message": "invalid api key"}})

    with FakeOpenAI(probe_script=refuses) as fake:
        extractor = _extractor(fake, tmp_path / "other")
        with pytest.raises(ConfigError, match=r"^LLM endpoint refused the request \(401\): invalid api key$"):
            extractor.extract_many([(TOOL, SERVER)], "run-1")
    assert fake.requests == []


def test_a_reply_cut_off_at_the_token_limit_is_quarantined_in_one_line(tmp_path):
    def endless(request, n):
        return Reply(body=text_completion(request, '{"triples": [{"head": "get_wid', finish_reason="length"))

    with FakeOpenAI(endless, offers=("json_schema",)) as fake:
        extractor = _extractor(fake, tmp_path, max_tokens=64)
        (result,) = extractor.extract_many([(TOOL, SERVER)], "run-1")
    assert isinstance(result, ExtractionFailure)
    assert result.reason == "LLM reply cut off at max_tokens 64 (finish_reason length)"
    assert result.raw.startswith('{"triples"') and len(fake.requests) == 1  # not re-asked: it would run out again
    assert fake.requests[0].body["max_tokens"] == 64


def _for_decoding() -> type[BaseModel]:
    """The reply model a server that constrains decoding is asked for (response_model() always sets one)."""
    model = response_model().for_constrained_decoding
    assert model is not None
    return model


def _admitted(schema: dict) -> set[tuple[str, str, str]]:
    """The (head type, relation, tail type) combinations a decoder held to the tool-centred schema can write."""
    admitted = set()
    for relation, spec in schema["properties"].items():
        items = spec["items"]
        if relation == "triples":
            for shape in items["anyOf"]:
                heads, tails = shape["properties"]["head_type"]["enum"], shape["properties"]["tail_type"]["enum"]
                name = shape["properties"]["relation"]["enum"][0]
                admitted |= {(h, name, t) for h in heads for t in tails}
        elif items.get("type") == "object":  # from a parameter: {parameter, entity, entity_type}
            admitted |= {("Parameter", relation, t) for t in items["properties"]["entity_type"]["enum"]}
        else:  # from the tool: names of the relation's one range type
            (kind,) = extraction_schema().predicates[relation].range
            admitted.add(("Tool", relation, kind))
    return admitted


def test_the_decoding_schema_admits_exactly_the_typed_triples_the_ontology_allows():
    schema = extraction_schema()
    decoding = _for_decoding().model_json_schema()
    allowed = {
        (head, relation, tail)
        for head, relation, tail in itertools.product(schema.types, schema.predicates, schema.types)
        if schema.allows(head, relation, tail)
    }
    # all but Tool -> Parameter, which the structural extractor states from the manifest
    assert _admitted(decoding) == allowed - {("Tool", "hasParameter", "Parameter")}
    assert decoding["required"] == list(decoding["properties"])  # every list written, in the schema's order
    capabilities = decoding["properties"]["hasCapability"]["items"]["enum"]
    assert "search" in capabilities and "read" in capabilities  # the action classes the offline extractor uses
    # the same validators: what the decoder may write is still checked against the tool
    model = _for_decoding()
    context = {"tool": ToolContext(name="get_widget", parameters=("widget_id",))}
    with pytest.raises(ValueError, match="'color' is not a parameter of 'get_widget'; its parameters are: widget_id"):
        model.model_validate(
            {"refersTo": [{"parameter": "color", "entity": "colour", "entity_type": "BusinessObject"}]}, context=context
        )
    with pytest.raises(ValueError, match="BusinessObject name '42' has no letters"):
        model.model_validate({"hasEntity": ["42"]}, context=context)
    with pytest.raises(ValueError, match="hasEntity must be a list, not str"):
        model.model_validate({"hasEntity": "widget"}, context=context)
    # made for one tool: its parameters are the only ones the decoder can name, and none means no such list
    for_one_tool = decoding_model(("widget_id", "colour")).model_json_schema()["properties"]
    assert for_one_tool["refersTo"]["items"]["properties"]["parameter"] == {"enum": ["widget_id", "colour"]}
    assert for_one_tool["refersTo"]["maxItems"] == 2
    assert "refersTo" not in decoding_model(()).model_json_schema()["properties"]


_NAMES = st.text(alphabet=st.characters(categories=("L", "Nd", "Zs")), min_size=1, max_size=20).filter(
    lambda name: any(c.isalpha() for c in name) and name.strip() == name
)


@st.composite
def _facts(draw) -> list[dict]:
    """Triples about ``get_widget`` (parameter ``widget_id``) the ontology allows, hasParameter aside."""
    schema = extraction_schema()
    combos = sorted(
        (head, relation, tail)
        for head, relation, tail in itertools.product(schema.types, schema.predicates, schema.types)
        if schema.allows(head, relation, tail) and relation != "hasParameter"
    )
    facts = []
    for head_type, relation, tail_type in draw(st.lists(st.sampled_from(combos), max_size=8)):
        head = {"Tool": "get_widget", "Parameter": "widget_id"}.get(head_type) or draw(_NAMES)
        facts.append(
            {"head": head, "head_type": head_type, "relation": relation, "tail": draw(_NAMES), "tail_type": tail_type}
        )
    return facts


@settings(max_examples=200, deadline=None)
@given(_facts())
def test_a_tool_centred_reply_reads_back_as_the_triples_it_lays_out(facts):
    """Any allowed facts, laid out as the decoding schema asks (as the fake's constrained decoder does), are
    read back as exactly those triples: nothing lost, moved or retyped on the way."""
    request = {"response_format": {"json_schema": {"schema": _for_decoding().model_json_schema()}}}
    reply = fake_openai.laid_out(request, facts)
    context = {"tool": ToolContext(name="get_widget", parameters=("widget_id",))}
    read = to_extracted(_for_decoding().model_validate(reply, context=context))

    def key(head, head_type, relation, tail, tail_type):  # names compare as the validators do: case, spaces
        return (" ".join(head.split()).casefold(), head_type, relation, " ".join(tail.split()).casefold(), tail_type)

    assert {key(**t.model_dump()) for t in read} == {key(**t) for t in facts}
