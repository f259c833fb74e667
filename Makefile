# Two commands do everything on a fresh machine with Python 3.11:
#   make demo   set up .venv, then rewrite a copy of the installed diffusers and show the diff and summary
#   make test   set up .venv, then run the test suite
PYTHON ?= python3
# Where torch comes from: empty here (the CPU wheel on disk); CI on GitHub sets the CPU wheel index.
TORCH_INDEX ?=
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

# On 2 shared cores, two torch threads give 100x latency spikes.
export OMP_NUM_THREADS := 1

.PHONY: install demo test benchmark sweep browser verify-main clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first, pinned: the CPU build on disk. An open range would pull a multi-GB CUDA build.
	$(BIN)/python -m pip install --quiet torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install --quiet -e '.[verify,bot,dev]'
	rm -f $(VENV)/.installed-*
	touch $@

DIFFUSERS_SRC = $(shell $(BIN)/python -c "import importlib.util, pathlib; print(pathlib.Path(importlib.util.find_spec('diffusers').origin).parent)")

demo: install
	rm -rf demo && mkdir -p demo/src
	cp -r $(DIFFUSERS_SRC) demo/src/diffusers
	find demo -name __pycache__ -prune -exec rm -rf {} +
	# A checkout's formatter pin and ruff settings beside src/: line length and the formatter gate.
	$(BIN)/python -m tools.checkout_layout demo
	$(BIN)/codemod run --diff --unsafe-fixes demo/src/diffusers > demo/fixes.diff || true
	@echo "--- the diff (demo/fixes.diff, first 60 lines) ---"; head -n 60 demo/fixes.diff
	@echo "--- applying the fixes to demo/src/diffusers ---"
	$(BIN)/codemod run --unsafe-fixes demo/src/diffusers > demo/remaining.txt || true
	@echo "--- findings left (report-only), by rule ---"
	$(BIN)/codemod run --check --format json demo/src/diffusers | $(BIN)/python -c "import json, sys; print(json.dumps(json.load(sys.stdin)['summary'], indent=2))"

test: install
	$(BIN)/python -m pytest -q

# TorchFix and Fixit pin libcst/click versions that clash with ours: they get their own venv.
.venv-bench/bin/fixit:
	$(PYTHON) -m venv .venv-bench
	.venv-bench/bin/python -m pip install --quiet "torchfix==0.7.0" "fixit==2.2.1"

benchmark: install .venv-bench/bin/fixit
	$(BIN)/python benchmarks/run.py --profile

# Every diffusers release on PyPI from 0.10.0 through the engine (hours; resumable): docs/releases.md.
sweep: install
	nice -n 10 $(BIN)/python benchmarks/sweep.py --jobs 2

# Debian's Chromium, for the test that loads `codemod verify --html` pages in a real headless browser
# (without it that test skips and the parse-based tests check the page). Needs root and apt-get.
browser:
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

# The whole verifier on a diffusers checkout (main): coverage by rule and reason, timings (into verify-main/).
# Arguments for `codemod verify` go in VERIFY_ARGS, e.g. VERIFY_ARGS="--device cuda".
verify-main: install
	@test -n "$(CHECKOUT)" || { echo "usage: make verify-main CHECKOUT=path/to/diffusers [VERIFY_ARGS=...]"; exit 2; }
	$(BIN)/python benchmarks/verify_main.py $(CHECKOUT) --out verify-main -- $(VERIFY_ARGS)

clean:
	rm -rf $(VENV) .venv-bench demo verify-main .codemod_cache .pytest_cache
