"""The extractor's usage and the LLM review are typed, yet the run summary's JSON keeps the shape it had as dicts:
a figure a job lacks is absent (not null), a job that did not run is ``{}``, and the keys keep their order."""

from __future__ import annotations

import json

from toolkg.flows.stages.infer import InferInfo
from toolkg.flows.steps import UsageInfo
from toolkg.summary import BuildSummary
from toolkg.usage import Confirmation, ExtractionUsage

# The dicts the extractors and the reviewer returned before they were typed, key for key and in order.
OFFLINE = {"extractor": "offline", "version": "2", "tools": 8, "cache_hits": 3}
LLM = {
    "extractor": "llm",
    "version": "1",
    "model": "m",
    "prompt": "tool-triples@2#ab",
    "structured_output": "",
    "tools": 4,
    "cache_hits": 1,
    "http_requests": 4,
    "probes": 0,
    "retries": 1,
    "reasks": 0,
    "failed": 0,
    "prompt_tokens": 400,
    "completion_tokens": 80,
    "predicates_mapped": {"works_for -> usedBy (synonym)": 1},
    "predicates_unmapped": {},
}
# as a priced endpoint's extraction reports it: cost after the token counts
PRICED = {**dict(list(LLM.items())[:14]), "cost": 0.5, **dict(list(LLM.items())[14:])}
REVIEW = {
    "model": "m",
    "prompt": "confirm@1#cd",
    "edges": 3,
    "cache_hits": 2,
    "http_requests": 3,
    "probes": 1,
    "retries": 0,
    "reasks": 1,
    "failed": 0,
    "prompt_tokens": 30,
    "completion_tokens": 9,
    "cost": 0.0012,
    "confirmed": 2,
    "rejected": 1,
    "unjudged": 0,
    "rejected_edges": ["a <- b: no"],
}


def _summary() -> BuildSummary:
    return BuildSummary(run_id="r", store="s", started="t")


def test_usage_dumps_as_the_dict_it_was_with_its_keys_in_order():
    assert list(PRICED)[13:16] == ["completion_tokens", "cost", "predicates_mapped"]
    for usage in (OFFLINE, LLM, PRICED):
        dumped = ExtractionUsage.model_validate(usage).model_dump(mode="json")
        assert list(dumped.items()) == list(usage.items())
    dumped = Confirmation.model_validate(REVIEW).model_dump(mode="json")
    assert list(dumped.items()) == list(REVIEW.items())


def test_the_summary_json_keeps_both_shapes_and_reads_them_back_typed():
    summary = _summary()
    summary.fold(UsageInfo(extraction=ExtractionUsage.model_validate(LLM)))
    summary.fold(InferInfo(inferred={"total": 3}, confirmation=Confirmation.model_validate(REVIEW)))
    text = summary.model_dump_json()
    raw = json.loads(text)
    assert json.dumps(raw["extraction"]) == json.dumps(LLM)
    assert json.dumps(raw["confirmation"]) == json.dumps(REVIEW)
    assert json.dumps(raw["stages"]["infer"]) == json.dumps({"inferred": {"total": 3}, "confirmation": REVIEW})
    again = BuildSummary.model_validate_json(text)
    assert again.extraction == ExtractionUsage.model_validate(LLM) and again.confirmation == Confirmation(**REVIEW)
    assert again.result(InferInfo) == InferInfo(inferred={"total": 3}, confirmation=Confirmation(**REVIEW))
    assert again.model_dump_json() == text


def test_a_job_that_did_not_run_is_an_empty_object_and_reads_back_as_none():
    summary = _summary()
    summary.fold(InferInfo(inferred={"total": 0}))
    raw = json.loads(summary.model_dump_json())
    assert raw["extraction"] == {} and raw["confirmation"] == {} and raw["stages"]["infer"]["confirmation"] == {}
    again = BuildSummary.model_validate_json(summary.model_dump_json())
    assert again.extraction is None and again.confirmation is None
    assert "extraction:" not in str(again) and "LLM review" not in str(again)


def test_the_printed_lines_read_the_typed_figures():
    summary = _summary()
    summary.fold(UsageInfo(extraction=ExtractionUsage.model_validate(OFFLINE)))
    assert "extraction: offline: 8 tools; predicates: ontology terms by construction" in str(summary)
    summary.fold(UsageInfo(extraction=ExtractionUsage.model_validate(PRICED)))
    summary.fold(InferInfo(inferred={"total": 3}, confirmation=Confirmation.model_validate(REVIEW)))
    printed = str(summary)
    assert "extraction: llm (m, prompt tool-triples@2#ab): 4 tools extracted, 1 cache hits, 0 failed; 4 HTTP" in printed
    assert "tokens 400 in / 80 out; cost 0.5000; predicates mapped onto the ontology 1, unmapped 0" in printed
    assert "LLM review of inferred dependencies (m): 2 confirmed, 1 rejected, 0 unjudged; 2 cache hits" in printed
    assert "(0 retries, 1 re-asks); cost 0.0012" in printed


def test_the_llm_counters_sit_in_the_order_the_client_counts_them():
    from toolkg.llm.client import Usage

    for model in (ExtractionUsage, Confirmation):
        fields = list(model.model_fields)
        start = fields.index("cache_hits")
        assert fields[start : start + len(Usage.FIELDS)] == list(Usage.FIELDS), model.__name__
