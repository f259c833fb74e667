# Two commands do everything on a fresh machine with Python 3.11:
#   make demo   set up .venv with what the demo runs, then rewrite a copy of diffusers 0.42.1 and show the diff
#   make test   set up .venv with everything (torch, the verifier, the bot, the test tools), then run the tests
PYTHON ?= python3
# torch is pinned to its CPU build. PyPI's Linux wheel is the multi-GB CUDA build, so by default torch comes from
# PyTorch's CPU index, unless pip already finds a local `+cpu` wheel of the pin without any index (find-links on an
# offline machine): tools/torch_index.py decides. TORCH_INDEX=URL overrides both.
TORCH := torch==2.13.0
TORCH_INDEX ?=
# The release the demo copies, and the README's and the tests' figures were made on (the dev extra's pin).
DIFFUSERS := diffusers==0.42.1
VENV := .venv
BIN := $(VENV)/bin
PYPROJECT_HASH := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
STAMP := $(VENV)/.installed-$(PYPROJECT_HASH)
DEMO_STAMP := $(VENV)/.demo-$(PYPROJECT_HASH)
# Test processes: one per core (pytest-xdist), each test module on one worker (its module fixtures built once),
# the longest modules first (tests/conftest.py's LONGEST_FIRST);
# PYTEST_WORKERS=0 runs them in one process.
PYTEST_WORKERS ?= auto

# On 2 shared cores, two torch threads give 100x latency spikes.
export OMP_NUM_THREADS := 1

.PHONY: install demo test lint benchmark sweep browser verify-main gpu-bundle gpu-bundle-check pin tag clean

install: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Everything: torch first (its CPU build, see TORCH above), then the project with all its extras.
# --no-warn-conflicts on torch's step only: after `make demo`, diffusers is there without its dependencies until the
# next step installs them, and pip would print an `ERROR:` about that passing state; the last step checks for real.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --no-warn-conflicts $(TORCH) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX),$$($(BIN)/python -m tools.torch_index $(TORCH)))
	$(BIN)/python -m pip install --quiet -e '.[verify,bot,dev]'
	rm -f $(VENV)/.installed-* $(VENV)/.demo-*
	# the full set-up holds everything the demo needs
	touch $@ $(DEMO_STAMP)

# Only what the demo runs: the static engine (no torch) and the diffusers release whose source it copies
# (never imported, so without its dependencies).
$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	$(BIN)/python -m pip install --quiet --no-deps $(DIFFUSERS)
	rm -f $(VENV)/.demo-*
	touch $@

DIFFUSERS_SRC = $(shell $(BIN)/python -c "import importlib.util, pathlib; print(pathlib.Path(importlib.util.find_spec('diffusers').origin).parent)")

# One engine run (tools/demo_summary.py) rewrites the copy and writes demo/fixes.diff and demo/remaining.txt; the
# screen gets the findings by rule, the diff's first whole hunks and the most frequent reasons a fix was declined.
demo: $(DEMO_STAMP)
	rm -rf demo && mkdir -p demo/src
	cp -r $(DIFFUSERS_SRC) demo/src/diffusers
	find demo -name __pycache__ -prune -exec rm -rf {} +
	# A checkout's formatter pin and ruff settings beside src/: line length and the formatter gate.
	$(BIN)/python -m tools.checkout_layout demo
	$(BIN)/python -m tools.demo_summary demo

test: install
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadscope --no-loadscope-reorder

# The rule set pyproject.toml pins (tests/test_lint.py runs the same check).
lint: install
	$(BIN)/python -m ruff check .

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

# What a lent GPU machine lacks for benchmarks/gpu_run.sh, gathered into .gpu-bundle/ for the device tool to carry
# (docs/gpu-evidence.md); CHECKOUT=path/to/diffusers-main adds that checkout for the main-subset stage.
gpu-bundle: install
	$(BIN)/python -m tools.gpu_bundle build .gpu-bundle $(if $(CHECKOUT),--checkout $(CHECKOUT))

# The bundle installed into a venv that holds only torch and a stand-in for the GPU machine's image, then gpu_run.sh
# as far as a machine without CUDA lets it go (about a minute; the venv's first build, 2 to 4 more). It checks the
# bundle as it is, so as not to remake one gathered with CHECKOUT without it.
gpu-bundle-check: install
	@test -d .gpu-bundle || { echo "no .gpu-bundle: make gpu-bundle [CHECKOUT=...] first"; exit 2; }
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 0 tests/test_gpu_bundle.py

# Point every pin of the tool (the docs' pip lines and pre-commit `rev:`, the bot workflow's CODEMOD_REF,
# PINNED_COMMIT) at one commit by its full SHA: HEAD, or COMMIT=REF. Commit the result (tests/test_pins.py checks them).
COMMIT ?= HEAD
pin: $(DEMO_STAMP)
	$(BIN)/python -m tools.pin $(COMMIT)

# A release process may also tag a commit: the version in pyproject.toml as the annotated tag vX.Y.Z (then
# `git push origin vX.Y.Z`); where pushed, a tag works wherever the pinned SHA goes.
VERSION = $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' pyproject.toml)
tag:
	git tag -a v$(VERSION) -m "diffusers-codemod $(VERSION)"

clean:
	rm -rf $(VENV) .venv-bench demo verify-main .codemod_cache .pytest_cache .gpu-bundle .gpu-bundle-cache gpu-run
