"""`toolkg build --extractor llm` in a subprocess: the API key is written nowhere, a missing endpoint fails fast."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import _PREFECT_HOME, CASES, TOOLKG
from tests.support.fake_openai import FakeOpenAI, Reply, completion, valid_triples
from toolkg.store.oxigraph_store import ToolStore

SECRET = "sk-toolkg-test-SECRET-4f9c2e"


CATALOG = [CASES / "openai_tools.json", CASES / "mcp_bing.json"]  # 2 manifests, 4 tools (2 described in Chinese)


def test_cli_llm_build_never_writes_the_api_key(cli, tmp_path):
    store = tmp_path / "store"
    with FakeOpenAI() as fake:
        config = tmp_path / "llm.toml"
        config.write_text(f'[llm]\nbase_url = "{fake.base_url}"\nmodel = "fake-model"\napi_key = "{SECRET}"\n')
        args = ("--store", str(store), "--extractor", "llm", "--llm-config", str(config))
        result = cli("build", *map(str, CATALOG), *args)
    assert result.returncode == 0, result.stderr
    assert "extraction: llm (fake-model, prompt tool-triples@2#" in result.stdout
    assert "4 tools extracted, 0 cache hits, 0 failed; 4 HTTP requests" in result.stdout
    assert "; structured output tools (2 probe requests); tokens " in result.stdout  # the fake offers no schemas
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


def test_sigterm_during_llm_extraction_ends_the_build_at_once_and_a_rerun_finishes_it(cli, prefect_api, tmp_path):
    """Prefect turns SIGTERM into an exception in the flow; the LLM requests in flight are not waited for (a
    slow model's reply took 44 s to arrive before the build obeyed), and the next run asks again."""
    store = tmp_path / "store"

    def slow(request, n):
        return Reply(body=completion(request, valid_triples(request)), delay=60)

    with FakeOpenAI(slow) as fake:
        config = tmp_path / "llm.toml"
        config.write_text(f'[llm]\nbase_url = "{fake.base_url}"\nmodel = "fake-model"\ntimeout = 120\n')
        args = ["build", *map(str, CATALOG), "--store", str(store), "--extractor", "llm", "--llm-config", str(config)]
        env = {**os.environ, "PREFECT_API_URL": prefect_api}
        build = subprocess.Popen([str(TOOLKG), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while not fake.requests and time.monotonic() < deadline and build.poll() is None:
            time.sleep(0.1)
        assert fake.requests, build.communicate()[0]
        sent = time.monotonic()
        build.send_signal(signal.SIGTERM)
        try:
            build.communicate(timeout=30)
        finally:
            build.kill()  # a no-op when it is gone; else the failing test leaves no build behind
        assert time.monotonic() - sent < 10  # not when the requests in flight would have been answered
    with FakeOpenAI() as fake:
        config.write_text(f'[llm]\nbase_url = "{fake.base_url}"\nmodel = "fake-model"\n')
        result = cli(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 tools extracted, 0 cache hits, 0 failed" in result.stdout  # the interrupted run stored no answer
    with ToolStore(store, read_only=True) as opened:
        assert len(opened.select("SELECT ?t WHERE { ?t a tk:Tool }")) == 4
