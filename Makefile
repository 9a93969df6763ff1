# membrane — two commands do all the set-up on a fresh machine:
#   make demo   refine the shipped flawed example corpus (offline, no API key);
#               make demo PACK=pizza: the pizza pack's (generated, workspace packs/pizza/demo)
#   make test   run the test suite, fast part (slow tests: make test-slow; CI runs both)
#   make hermes hermes-agent's own environment (.venv-hermes) for `--proposer hermes` and `acp`
# Needs: python3.11 (with venv) and Java >= 11 (17 recommended) for HermiT.

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
HERMES_VENV  := .venv-hermes
HERMES_STAMP := $(HERMES_VENV)/.installed
PACK   ?= facility

.PHONY: native demo test test-slow test-all reliability lock hermes lint typecheck bench corpus clean-demo install check-java chromium docs docs-reference

install: $(STAMP)

check-java:
	@scripts/check-java

# the browser tests of `membrane serve` drive Debian's Chromium (a browser build cannot be
# downloaded here): installed with apt when missing, else a clear stop
chromium:
	@scripts/check-chromium

# every dependency locked with hashes (issue 17; `make lock` regenerates the locks from
# pyproject.toml and constraints*.txt): pip installs uv and setuptools by hash, uv installs the
# locked set (--require-hashes), then the project itself without dependencies
LOCK := requirements
UV   := $(BIN)/uv
$(STAMP): pyproject.toml $(LOCK)/bootstrap.lock $(LOCK)/main.lock | check-java
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found; install Python 3.11 (or run make PYTHON=/path/to/python3.11)" >&2; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --require-hashes --no-deps -r $(LOCK)/bootstrap.lock
	$(UV) pip install -q --compile-bytecode --python $(BIN)/python --require-hashes -r $(LOCK)/main.lock
	$(UV) pip install -q --python $(BIN)/python --no-deps --no-build-isolation -e .
	@# the project's bytecode, as pip writes a wheel's: an editable install writes none, and
	@# where PYTHONDONTWRITEBYTECODE is set each command compiled its modules again (~0.1 s)
	$(BIN)/python -m compileall -q harness effectors ontology rules bench
	@# the prose gate's hot modules compiled with mypyc (issue 20); says why and goes on without
	$(BIN)/python scripts/build_native.py
	@# the warm JVM's classes in a class-data-sharing archive (issue 16); says why and goes on without
	$(BIN)/python scripts/build_jvm_archive.py
	@touch $(STAMP)

# hermes-agent pins pydantic, openai, httpx ... at versions that conflict with ours and
# installs generic top-level modules (tools, utils, agent): it gets its own environment.
hermes: $(HERMES_STAMP)

$(HERMES_STAMP): $(LOCK)/hermes.lock | $(STAMP)
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found; install Python 3.11 (or run make PYTHON=/path/to/python3.11)" >&2; exit 1; }
	@test -x $(HERMES_VENV)/bin/python || $(PYTHON) -m venv $(HERMES_VENV)
	$(UV) pip install -q --compile-bytecode --python $(HERMES_VENV)/bin/python --require-hashes -r $(LOCK)/hermes.lock
	@touch $(HERMES_STAMP)

# regenerate the locks after changing pyproject.toml, constraints.txt or constraints-hermes.txt
# (main: every platform; hermes: Linux, as hermes-agent 0.19.0 cannot resolve on Windows)
UV_COMPILE := $(UV) pip compile --quiet --python-version 3.11.5 --generate-hashes --custom-compile-command "make lock"
lock: $(STAMP)
	$(UV_COMPILE) --universal $(LOCK)/tools.in -o $(LOCK)/bootstrap.lock
	$(UV_COMPILE) --universal pyproject.toml --extra dev --extra serve --extra acp --extra ray -c constraints.txt $(LOCK)/tools.in -o $(LOCK)/main.lock
	$(UV_COMPILE) --python-platform linux $(LOCK)/hermes.in -c constraints-hermes.txt -o $(LOCK)/hermes.lock

demo: $(STAMP)
ifeq ($(PACK),facility)
	$(BIN)/membrane batch packs/facility/corpus/demo.jsonl --pack packs/facility --workspace .
else ifeq ($(PACK),pizza)
	$(BIN)/python packs/pizza/generate.py corpus --seed 11 --count 120 --out packs/pizza/corpus
	@mkdir -p packs/pizza/demo
	$(BIN)/membrane batch packs/pizza/corpus/demo.jsonl --pack packs/pizza --workspace packs/pizza/demo
else
	$(error PACK=$(PACK): make demo knows PACK=facility (the default) and PACK=pizza)
endif

# the fast suite (the README's test command); the slow tests: make test-slow; CI: both
test: $(STAMP) $(HERMES_STAMP) chromium
	$(BIN)/python -m pytest -q -m "not slow"

test-slow: $(STAMP) $(HERMES_STAMP) chromium
	$(BIN)/python -m pytest -q -m slow

test-all: $(STAMP) $(HERMES_STAMP) chromium
	$(BIN)/python -m pytest -q

# the docs site (docs/, mkdocs.yml) into site/ (git-ignored); the reference pages under
# docs/reference/generated/ are written from the code by docs-reference (a test fails when stale)
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict

docs-reference: $(STAMP)
	$(BIN)/python scripts/gen_reference.py

# issue 17: the crash matrix (>= 300 SIGKILL points), the soak, the disk faults, the tamper
# matrix and the fuzzers, one table (python -m tests.reliability --json for JSON)
reliability: $(STAMP)
	$(BIN)/python -m tests.reliability

# compile the prose gate's hot modules again after changing them (make does it once on
# install; until then the changed sources run, never a stale build)
native: $(STAMP)
	$(BIN)/python scripts/build_native.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(STAMP)
	$(BIN)/python -m bench loop --json
	$(BIN)/python -m bench value_gate --json
	$(BIN)/python -m bench ri_gate --json
	$(BIN)/python -m bench prose_gate --json
	$(BIN)/python -m bench outcomes --json
	$(BIN)/python -m bench export --json

corpus: $(STAMP)
	$(BIN)/python packs/facility/generate.py owl --out packs/facility/ontology/facility.owl
	$(BIN)/python packs/facility/generate.py corpus --seed 7 --count 240 --out packs/facility/corpus
	$(BIN)/python packs/facility/generate.py references --out packs/facility/references
	$(BIN)/python packs/facility/prose_cases.py --out packs/facility/corpus

clean-demo:
	rm -rf scratch/* current/* archive trace .membrane packs/pizza/demo
	@touch scratch/.gitkeep current/.gitkeep
