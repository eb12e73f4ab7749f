# trajcurate — developer entry points. `make demo` and `make test` work on a fresh machine.

SHARED ?= ../shared
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo
DEMO := out/demo

.PHONY: venv venv-demo venv-harbor venv-datasets4 demo test lint bench bench-convert bench-pipeline bench-redact bench-report bench-diagnose bench-trial-files bench-dask clean

venv: $(STAMP)
venv-demo: $(DEMO_STAMP)

# The `datasets` release LLaMA-Factory pins, in a venv of its own: tests/test_datasets_compat.py
# loads every job's lf.json with it (and with the latest, in .venv) without `features=`.
DATASETS4 := .venv-datasets4
DATASETS4_STAMP := $(DATASETS4)/.installed
venv-datasets4: $(DATASETS4_STAMP)

$(DATASETS4_STAMP):
	test -x $(DATASETS4)/bin/python || $(PYTHON) -m venv $(DATASETS4)
	$(DATASETS4)/bin/pip install --quiet 'datasets==4.0.0'
	touch $@

# Sources compiled in place by setup.py (mypyc, C): a change to one rebuilds them.
NATIVE_SOURCES := setup.py scorers/im_check.py scorers/im_validity.py scorers/_im_fast.c \
	scorers/tqs_v2/_speedups.c \
	transforms/redaction/_survey.c transforms/sinks/_conform.c \
	$(filter-out scorers/tqs_v2/__init__.py,$(wildcard scorers/tqs_v2/*.py)) \
	transforms/readers/atif_claude.py transforms/readers/atif_files.py \
	transforms/readers/atif_messages.py transforms/readers/atif_schema.py \
	transforms/readers/atif_sidechains.py transforms/readers/conversation.py \
	transforms/readers/im_builder.py transforms/cleaning.py transforms/json_text.py \
	transforms/sinks/schema.py

# Reinstalls whenever pyproject.toml or a compiled source changes (the stamp is older).
# The demo needs only the package and the report's charts; the tests need everything (and
# installing everything also serves the demo).
$(DEMO_STAMP): pyproject.toml $(NATIVE_SOURCES)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e '.[report]'
	touch $@

$(STAMP): pyproject.toml $(NATIVE_SOURCES)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e '.[dev,gcp,aws,report,dask]'
	touch $@ $(DEMO_STAMP)

# Generates a small synthetic corpus of Harbor jobs, then runs the pipeline over it.
demo: venv-demo
	rm -rf $(DEMO)
	$(BIN)/trajcurate synth --out $(DEMO)/jobs --jobs 2 --trials 150 --seed 1
	$(BIN)/trajcurate run --input $(DEMO)/jobs --output $(DEMO)/curated --diagnose --report
	@echo
	@echo "synthetic Harbor jobs: $(DEMO)/jobs"
	@echo "curated outputs:       $(DEMO)/curated/<job>/ (im.jsonl, lf.json, lf.stats.json,"
	@echo "                       dataset_info.json, scores.jsonl, rejects.jsonl, dead_letter.jsonl,"
	@echo "                       manifest.json)"
	@echo "report:                $(DEMO)/curated/report/index.html (open it in a browser)"

lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy

test: lint venv-datasets4
	sh benchmarks/ensure_chromium.sh
	TRAJCURATE_SHARED=$(SHARED) TRAJCURATE_DATASETS4_PYTHON=$(CURDIR)/$(DATASETS4)/bin/python $(BIN)/pytest

bench: venv
	$(BIN)/python benchmarks/bench_score.py --cases $(SHARED)/data/reference-scored/cases.jsonl

bench-convert: venv
	$(BIN)/python benchmarks/bench_convert.py --job $(SHARED)/data/composed/jobs/2026-06-16__12-00-00

bench-redact: venv
	$(BIN)/python benchmarks/bench_redact.py --pipeline --trials 1000 --cases $(SHARED)/data/reference-scored/cases.jsonl

# The pipeline benchmark runs in a venv with the package alone (what `pip install trajcurate`
# gives): the test venv's cloud extras make `import apache_beam` load the GCS and Dataflow
# clients (1.2 s and 213 MiB instead of 0.6 s and 129 MiB). `HARBOR=path/to/harbor` adds the
# comparison with `harbor traces export` (`make venv-harbor` installs it with Python 3.12).
CORE := .venv-core
CORE_STAMP := $(CORE)/.installed
HARBOR ?=
# The first Python 3.12 that runs: `python3.12` on the PATH, else one pyenv installed (its
# shim fails while that version is not selected); evaluated only by `venv-harbor`.
PYTHON312 ?= $(firstword $(foreach p,python3.12 $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12),$(shell $(p) -c '' >/dev/null 2>&1 && echo $(p))))

$(CORE_STAMP): pyproject.toml $(NATIVE_SOURCES)
	test -x $(CORE)/bin/python || $(PYTHON) -m venv $(CORE)
	$(CORE)/bin/pip install --quiet -e .
	touch $@

bench-pipeline: $(CORE_STAMP)
	$(CORE)/bin/python benchmarks/bench_pipeline.py --sizes 1000 2000 10000 \
		--clone-job $(SHARED)/data/composed/jobs/2026-06-16__12-00-00 --clone-trials 2000 \
		$(if $(HARBOR),--harbor $(HARBOR))

venv-harbor:
	@test -n "$(PYTHON312)" || { echo "venv-harbor: no Python 3.12 found; make venv-harbor PYTHON312=/path/to/python3.12" >&2; exit 2; }
	test -x .venv-harbor/bin/python || $(PYTHON312) -m venv .venv-harbor
	.venv-harbor/bin/pip install --quiet 'harbor[huggingface]==0.26.0'

# `--runner dask` on loopback clusters of 1 and 2 worker processes against the local runner,
# at 2,000 and 10,000 synth trials (~5 min); files checked byte-identical to the local run's.
bench-dask: venv
	$(BIN)/python benchmarks/bench_dask.py --sizes 2000 10000 --workers 1 2

bench-trial-files: venv
	$(BIN)/python benchmarks/bench_trial_files.py --files 8000 100000

bench-report: venv
	$(BIN)/python benchmarks/bench_report.py --trials 100000

bench-diagnose: venv
	$(BIN)/python benchmarks/bench_diagnose.py --cases $(SHARED)/data/reference-scored/cases.jsonl

clean:
	rm -rf out build .pytest_cache .mypy_cache .ruff_cache .hypothesis $(DATASETS4) $(CORE)
	find scorers -name '*.so' -delete
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -exec rm -rf {} +
