# trajcurate — developer entry points. `make demo` and `make test` work on a fresh machine.

SHARED ?= ../shared
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_OUT := out/demo/scored.jsonl

.PHONY: venv demo test lint bench bench-convert clean

venv: $(STAMP)

# Reinstalls whenever pyproject.toml changes (the stamp is older than it).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

demo: venv
	$(BIN)/trajcurate score $(SHARED)/data/reference-scored/cases.jsonl -o $(DEMO_OUT)
	@echo
	@echo "scored records: $(DEMO_OUT)"
	@echo "rejected lines: $(DEMO_OUT:.jsonl=.rejects.jsonl)"

lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy

test: lint
	TRAJCURATE_SHARED=$(SHARED) $(BIN)/pytest

bench: venv
	$(BIN)/python benchmarks/bench_score.py --cases $(SHARED)/data/reference-scored/cases.jsonl

bench-convert: venv
	$(BIN)/python benchmarks/bench_convert.py --job $(SHARED)/data/composed/jobs/2026-06-16__12-00-00

clean:
	rm -rf out build .pytest_cache .mypy_cache .ruff_cache .hypothesis
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -exec rm -rf {} +
