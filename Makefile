# optseq: `make` sets everything up and opens the console; `make test` runs the suite.
# `make` installs optseq with the reference workload (`.[engine]`: the default plan's built-in levers are
# engine benches); `make test` and the developer targets add the dev and ray extras.
# TORCH picks the torch requirement, installed first: the CPU wheel by default (fast here and in CI);
# `make TORCH=torch` (or a CUDA index URL via PIP_EXTRA_INDEX_URL) on a GPU machine.
PYTHON ?= python3
TORCH ?= torch==2.13.0
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.optseq-installed
DEV_STAMP := $(VENV)/.optseq-installed-dev
ARGS ?=

.PHONY: run test test-fast test-burn bench simulate clean

run: $(STAMP)
	$(BIN)/optseq $(ARGS)

# The suite runs on JOBS workers (pytest-xdist; one per core by default, JOBS=0 for one process): most tests wait
# on real processes they launch. A module whose fixture is built once (a wheel, a Ray cluster) keeps to one
# worker (its xdist_group mark, honoured by --dist loadgroup).
JOBS ?= $(shell nproc)
PYTEST := $(BIN)/python -m pytest -q -n $(JOBS) --dist loadgroup --durations=10

test: $(DEV_STAMP)
	OPTSEQ_REQUIRE_NATIVE=1 OPTSEQ_REQUIRE_RAY=1 $(PYTEST) $(ARGS)

# The quick loop for developers: everything but the tests marked slow (real benches, training, terminals)
test-fast: $(DEV_STAMP)
	OPTSEQ_REQUIRE_NATIVE=1 $(PYTEST) -m "not slow" $(ARGS)

# The suite with every core busy (BURN busy loops, one per core by default), as on a machine running a bench:
# a test whose verdict depends on the machine's speed fails here first.
BURN ?= $(shell nproc)
test-burn: $(DEV_STAMP)
	@pids=""; for i in $$(seq $(BURN)); do ( while :; do :; done ) & pids="$$pids $$!"; done; \
	trap 'kill $$pids 2>/dev/null' EXIT INT TERM; \
	echo "running the suite beside $(BURN) CPU burners"; \
	OPTSEQ_REQUIRE_NATIVE=1 OPTSEQ_REQUIRE_RAY=1 $(PYTEST) $(ARGS)

bench: $(DEV_STAMP)
	$(BIN)/python -m optseq.engine.bench all --write docs/performance.md

# Store cost against history: stores of 100 / 1,000 / 10,000 real-shaped runs built through the real API,
# status, writes, runs --json and export timed as fresh processes, into docs/performance.md (its own section)
.PHONY: store-bench
store-bench: $(DEV_STAMP)
	$(BIN)/python -m optseq.state.bench.store --write docs/performance.md $(ARGS)

# What a Ray run costs over a local one (a throwaway two-node cluster on 127.0.0.1), into docs/performance.md
.PHONY: runner-bench
runner-bench: $(DEV_STAMP)
	$(BIN)/python -m optseq.state.bench.runners --write docs/performance.md $(ARGS)

# The console's first screen (tmux 80×24, keys on screen) and `optseq status` against `import textual.app`, side by
# side, into docs/performance.md (its own section)
.PHONY: paint-bench
paint-bench: $(DEV_STAMP)
	$(BIN)/python -m optseq.console.paint_bench --write docs/performance.md $(ARGS)

# Decision quality: false adopts, power and pairs per decision over seeded draws through the real decision code
simulate: $(DEV_STAMP)
	$(BIN)/python -m optseq.state.bench.simulate --write docs/performance.md

# Change points: on seeded simulated lever histories (each run a real pass-loop run on the simulated bench), how
# often a step is found within ±2 runs and how often one is reported without a change, for ruptures' defaults and
# optseq's detector, into docs/performance.md (its own section)
.PHONY: change-points
change-points: $(DEV_STAMP)
	$(BIN)/python -m optseq.state.bench.change_points --write docs/performance.md $(ARGS)

# On a GPU machine: AMP and compile at hidden 64 and 1024, then model_size, into docs/performance.md
# (its own section). Where the machine's python3 already holds a CUDA torch and nothing can be
# installed, skip the venv: `make gpu-check GPU_PYTHON=python3`.
.PHONY: gpu-check
gpu-check: $(if $(GPU_PYTHON),,$(DEV_STAMP))
	$(or $(GPU_PYTHON),$(BIN)/python) -m optseq.engine.bench gpu-check --write docs/performance.md $(ARGS)

# $(call install,EXTRAS): the venv, the build tools, $(TORCH) first (so pip keeps that build), then optseq, its
# bytecode written once (an editable install leaves that to the first import, which PYTHONDONTWRITEBYTECODE
# stops: every command would compile optseq again)
define install
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip setuptools wheel "cython>=3.0"
	$(BIN)/python -m pip install -q "$(TORCH)"
	$(BIN)/python -m pip install -q --no-build-isolation -e ".[$(1)]"
	$(BIN)/python -m compileall -q -j 0 console engine native state
endef
INSTALL_DEPS := pyproject.toml setup.py $(wildcard native/*.pyx native/*.pxd)
RUN_EXTRAS := engine
DEV_EXTRAS := engine,dev,ray

# `make`: the console and the reference levers
$(STAMP): $(INSTALL_DEPS)
	$(call install,$(RUN_EXTRAS))
	touch $(STAMP)

# `make test` and the developer targets: that plus the dev and ray extras, which covers $(STAMP) too
$(DEV_STAMP): $(INSTALL_DEPS)
	$(call install,$(DEV_EXTRAS))
	touch $(STAMP) $(DEV_STAMP)

clean:
	rm -rf $(VENV) build native/*.c native/*.so
