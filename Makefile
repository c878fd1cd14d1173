# optseq: `make` sets everything up and opens the console; `make test` runs the suite.
# `make` installs optseq with the reference workload (`.[engine]`: the default plan's built-in levers are
# engine benches); `make test-fast` and the developer targets add the dev extra, `make test` and `make test-burn`
# the ray extra too (the suite's Ray cluster tests; the rest of the suite skips without it).
PYTHON ?= python3
# TORCH is the torch requirement, installed first (so pip keeps that build); TORCH_INDEX is where pip gets it.
# A machine with no NVIDIA driver (no nvidia-smi, no /proc/driver/nvidia) gets PyTorch's CPU wheel index, so it
# downloads the CPU build, not PyPI's default Linux wheel (a CUDA build and its CUDA libraries). A GPU machine gets
# PyPI's default. `make TORCH_INDEX=` takes PyPI's default anywhere, `make TORCH_INDEX=URL` another index (a CUDA
# one, e.g. https://download.pytorch.org/whl/cu130). A build of $(TORCH) already on this machine (a wheel in pip's
# find-links) is installed from there first, and nothing of torch is downloaded.
TORCH ?= torch==2.13.0
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
, := ,
NVIDIA := $(shell command -v nvidia-smi >/dev/null 2>&1 || test -d /proc/driver/nvidia && echo yes)
TORCH_INDEX ?= $(if $(NVIDIA),,$(TORCH_CPU_INDEX))
# What the torch install says before it downloads. Sizes of torch 2.13.0 for Python 3.11 on x86-64 Linux, measured
# 2026-12-04 with `pip download`: the CPU wheel 183 MiB and its 9 dependencies (sympy, networkx, ...) 10 MiB, 202 MB
# in all; PyPI's default, 29 files, 2.74 GB: its wheel 502 MiB, 19 CUDA packages (nvidia-*, cuda-*, triton)
# 2,102 MiB, the same 9 dependencies.
TORCH_SAYS := $(if $(TORCH_INDEX),$(if $(filter $(TORCH_CPU_INDEX),$(TORCH_INDEX)),\
  installing $(TORCH) CPU build (about 200 MB to download) from $(TORCH_INDEX)$(if $(NVIDIA),,: no NVIDIA driver\
  here); make TORCH_INDEX= for PyPI's default (a CUDA build and its CUDA libraries$(,) about 2.7 GB),\
  installing $(TORCH) from $(TORCH_INDEX)),\
  installing $(TORCH) from PyPI's default index: on Linux a CUDA build and its CUDA libraries$(,) about 2.7 GB to\
  download$(if $(NVIDIA),$(,) as this machine has an NVIDIA driver); make TORCH_INDEX=$(TORCH_CPU_INDEX) for the\
  CPU build (about 200 MB))
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.optseq-installed
DEV_STAMP := $(VENV)/.optseq-installed-dev
RAY_STAMP := $(VENV)/.optseq-installed-ray
ARGS ?=

.PHONY: run test test-fast test-burn bench simulate clean

run: $(STAMP)
	$(BIN)/optseq $(ARGS)

# The suite runs on JOBS workers (pytest-xdist; one per core by default, JOBS=0 for one process): most tests wait
# on real processes they launch. A module whose fixture is built once (a wheel, a Ray cluster) keeps to one
# worker (its xdist_group mark, honoured by --dist loadgroup).
JOBS ?= $(shell nproc)
PYTEST := $(BIN)/python -m pytest -q -n $(JOBS) --dist loadgroup --durations=10

test: $(RAY_STAMP)
	OPTSEQ_REQUIRE_NATIVE=1 OPTSEQ_REQUIRE_RAY=1 $(PYTEST) $(ARGS)

# The quick loop for developers: everything but the tests marked slow (real benches, training, terminals, the Ray
# cluster), so it needs no ray
test-fast: $(DEV_STAMP)
	OPTSEQ_REQUIRE_NATIVE=1 $(PYTEST) -m "not slow" $(ARGS)

# The suite with every core busy (BURN busy loops, one per core by default), as on a machine running a bench:
# a test whose verdict depends on the machine's speed fails here first.
BURN ?= $(shell nproc)
test-burn: $(RAY_STAMP)
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

# What `optseq sync` costs beside a bare `git fetch` of the same refs (first and incremental), into docs/performance.md;
# at the issue's size, make sync-bench ARGS="--runs 10000,100000 --first 1 --stores DIR" (DIR keeps each size's
# built store for the next run: a 100,000-run build takes a quarter of an hour on an idle core, an hour beside others)
.PHONY: sync-bench
sync-bench: $(DEV_STAMP)
	$(BIN)/python -m optseq.state.bench.sync --write docs/performance.md $(ARGS)

# The screen on the reference workload (issue 40): `optseq --run screen` over the engine's AMP, compile and Option A
# levers at --hidden 64 and 512 and over cpu_train's four toggles, each in a fresh store, into docs/performance.md
.PHONY: screen-bench
screen-bench: $(DEV_STAMP)
	$(BIN)/python -m optseq.state.bench.screen_ref --write docs/performance.md $(ARGS)

# What a Ray run costs over a local one (a throwaway two-node cluster on 127.0.0.1), into docs/performance.md
.PHONY: runner-bench
runner-bench: $(RAY_STAMP)
	$(BIN)/python -m optseq.state.bench.runners --write docs/performance.md $(ARGS)

# What a local launch's shim (state/runners/shim.py) costs beside a bare launch, into docs/performance.md
.PHONY: launch-bench
launch-bench: $(DEV_STAMP)
	$(BIN)/python -m optseq.state.bench.launch --write docs/performance.md $(ARGS)

# The console's first screen (tmux 80×24, keys on screen) against a minimal Textual app's, and `optseq status`
# against `import textual.app`, side by side, into docs/performance.md (its own section)
.PHONY: paint-bench
paint-bench: $(DEV_STAMP)
	$(BIN)/python -m optseq.console.bench.paint_bench --write docs/performance.md $(ARGS)

# The type checker over state/ and console/ (pyproject.toml's [tool.mypy]), through links that name the folders as
# the wheel does (optseq.state, ...); `make lint` adds the import contracts (tests/test_layers.py runs them too)
TYPING := build/typing/optseq
.PHONY: typecheck lint
typecheck: $(DEV_STAMP)
	@mkdir -p $(TYPING) && touch $(TYPING)/__init__.py
	@for room in console engine native state configs; do ln -sfn ../../../$$room $(TYPING)/$$room; done
	$(BIN)/python -m mypy

lint: typecheck
	$(BIN)/python -m pytest -q -n 0 -p no:cacheprovider tests/test_layers.py

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
	$(install_torch)
	$(BIN)/python -m pip install -q --no-build-isolation -e ".[$(1)]"
	$(BIN)/python -m compileall -q -j 0 console engine native state
endef
# torch: a build already on this machine if pip finds one without an index (then its dependencies as usual), else
# from $(TORCH_INDEX), said first. --index-url: the CPU index holds torch's dependencies too.
define install_torch
	@if $(BIN)/python -m pip install -q --no-index --no-deps "$(TORCH)" >/dev/null 2>&1; then \
		echo "$(TORCH): a build already on this machine (installed, or a wheel in pip's find-links); nothing of torch to download"; \
		echo '$(BIN)/python -m pip install -q "$(TORCH)"'; $(BIN)/python -m pip install -q "$(TORCH)"; \
	else \
		echo "$(strip $(TORCH_SAYS))"; \
		echo '$(BIN)/python -m pip install -q $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX) )"$(TORCH)"'; \
		$(BIN)/python -m pip install -q $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX) )"$(TORCH)"; \
	fi
endef
INSTALL_DEPS := pyproject.toml setup.py $(wildcard native/*.pyx native/*.pxd)
RUN_EXTRAS := engine
DEV_EXTRAS := engine,dev
RAY_EXTRAS := engine,dev,ray

# `make`: the console and the reference levers
$(STAMP): $(INSTALL_DEPS)
	$(call install,$(RUN_EXTRAS))
	touch $(STAMP)

# `make test-fast` and the developer targets: that plus the dev extra, which covers $(STAMP) too
$(DEV_STAMP): $(INSTALL_DEPS)
	$(call install,$(DEV_EXTRAS))
	touch $(STAMP) $(DEV_STAMP)

# `make test`, `make test-burn`, `make runner-bench`: the dev and ray extras, which covers both above
$(RAY_STAMP): $(INSTALL_DEPS)
	$(call install,$(RAY_EXTRAS))
	touch $(STAMP) $(DEV_STAMP) $(RAY_STAMP)

clean:
	rm -rf $(VENV) build native/*.c native/*.so
