# Two commands do all the set-up: `make demo` and `make test`. Both create .venv on first use.
PY ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test lint bench eval clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	# torch first, pinned: an unpinned torch would pull a multi-GB CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/memsieve demo

lint: install
	$(BIN)/ruff check src tests benchmarks

test: install lint
	$(BIN)/pytest -q

bench: install
	$(BIN)/python benchmarks/bench_store.py

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache
