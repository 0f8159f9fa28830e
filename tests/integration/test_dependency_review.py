"""LLM review of inferred dependencies over real HTTP (fake OpenAI-compatible server): confirmed
edges get basis llm, rejected ones are dropped, unjudged ones stay inferred and are reported,
and verdicts are cached per pair."""

from __future__ import annotations

import json

import pytest

from tests.conftest import CASES
from tests.support.fake_openai import FakeOpenAI, Reply, completion
from toolkg.store.dependencies import dependency_rows
from toolkg.store.oxigraph_store import ToolStore

SHOP = CASES / "inference" / "shop.json"


def _tools_in(request: dict) -> tuple[str, str]:
    user = [m for m in request["messages"] if m["role"] == "user"][0]["content"]
    decoder = json.JSONDecoder()
    consumer = decoder.raw_decode(user[user.index("{", user.index("Consumer tool:")) :])[0]
    producer = decoder.raw_decode(user[user.index("{", user.index("Producer tool:")) :])[0]
    return consumer["name"], producer["name"]


def reviewer(request: dict, n: int) -> Reply:
    """Rejects every edge from the login tool, answers garbage about validate_email, confirms the rest."""
    assert request["tools"][0]["function"]["name"] == "DependencyVerdict"
    consumer, producer = _tools_in(request)
    if producer == "validate_email":
        return Reply(body=completion(request, '{"depends": "maybe"}'))
    verdict = {"depends": producer != "acme_user_login", "confidence": 0.93, "reason": f"{consumer} needs it"}
    return Reply(body=completion(request, json.dumps(verdict)))


@pytest.mark.slow
def test_llm_confirms_rejects_and_caches_per_pair(build, store_dir, monkeypatch):
    offline = build([SHOP], store_dir / "offline", links=False)
    with FakeOpenAI(reviewer) as fake:
        monkeypatch.setenv("TOOLKG_LLM_BASE_URL", fake.base_url)
        monkeypatch.setenv("TOOLKG_LLM_MODEL", "fake-model")
        monkeypatch.setenv("TOOLKG_LLM_MAX_REASKS", "1")
        summary = build([SHOP], store_dir, links=False, confirm_deps=True)
        first_requests = len(fake.requests)
        again = build([SHOP], store_dir, links=False, confirm_deps=True)
    review = summary.confirmation
    store = ToolStore(store_dir)
    rows = dependency_rows(store)
    inferred = [r for r in rows if r["basis"] != "declared"]
    # every edge from the login tool was rejected and is gone; the rest were confirmed with the model's reason
    rejected = offline.inferred["total"] - summary.inferred["total"]
    assert rejected > 0 and review.rejected == rejected
    assert not any(r["producer"].endswith("::acme_user_login") for r in inferred)
    confirmed = [r for r in inferred if r["basis"] == "llm"]
    assert len(confirmed) == review.confirmed > 0
    assert all(r["confidence"] == 0.93 and "LLM: " in r["evidence"] for r in confirmed)
    # the garbage verdict kept its edge unconfirmed and was reported, one line per pair
    unjudged = [r for r in inferred if r["basis"] == "inferred"]
    assert [r["producer"].split("::")[1] for r in unjudged] == ["validate_email"] * review.unjudged
    assert review.unjudged >= 1 and review.reasks >= 1
    assert any(q.stage == "confirm" and "validate_email" in q.item for q in summary.quarantined)
    # the rerun asks nothing new: verdicts are cached per pair (the failure is retried)
    assert again.confirmation.cache_hits == review.confirmed + review.rejected
    assert len(fake.requests) - first_requests == review.unjudged * 2  # one ask + one re-ask each
    assert again.inferred == summary.inferred
    store.close()
