# Set-up is part of every target: a fresh clone needs only `make demo` or `make test`.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install demo test lint bench clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)  ## create .venv with the pinned dependencies

demo: $(STAMP)  ## build the bundled sample catalogs into ./.toolkg and print the run summary
	$(BIN)/toolkg build data/livemcpbench/tools.json data/toollinkos --store .toolkg

test: $(STAMP)  ## lint, then the whole test suite
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

bench: $(STAMP)  ## build (sample catalogs, synthetic 10k and 100k tools), extraction, inference and retrieval benchmarks
	$(BIN)/python benchmarks/build_bench.py
	$(BIN)/python benchmarks/extraction_bench.py
	$(BIN)/python benchmarks/inference_bench.py
	$(BIN)/python benchmarks/retrieval_bench.py

clean:
	rm -rf .toolkg benchmarks/results
