# Two commands do all the set-up: `make demo` and `make test`. Both create .venv on first use.
PY ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test lint bench lock clean

# torch first, pinned: an unpinned torch would pull a multi-GB CUDA build. Then the exact
# versions the tests passed with (requirements.lock), then memsieve itself without resolving.
$(STAMP): pyproject.toml requirements.lock
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
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
	$(BIN)/python benchmarks/bench_live.py

# Refresh the lock on purpose: resolve pyproject.toml afresh in a clean venv and pin the result.
lock:
	rm -rf .lock-venv && $(PY) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet torch==2.13.0
	.lock-venv/bin/pip install --quiet -e '.[dev]'
	{ echo "# Exact versions the tests pass with. Refresh on purpose with 'make lock'."; \
	  .lock-venv/bin/pip freeze --exclude-editable | sed 's/^torch==.*/torch==2.13.0/'; \
	} > requirements.lock
	rm -rf .lock-venv

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache
