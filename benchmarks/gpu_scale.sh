#!/usr/bin/env bash
# The real-scale evidence, once, on a machine with a GPU (issue 22): each group of changes timed at
# its models' released width on both trees, eager and compiled, and written to gpu-evidence.md.
#
#   benchmarks/gpu_scale.sh [--budget SECONDS] [--group NAME]...   # results: $OUT, else docs/
#
# Groups, in priority order (benchmarks/gpu_scale.py: GROUPS): QwenImage before diffusers #13406
# (the released 60 blocks); DIF005 on the SD3 and Sana loops, DIF002 on
# FlowMatchHeunDiscreteScheduler, DIF001 on Kandinsky 5 and NucleusMoE; DIF003 compile time; the SD3
# loop compiled. A case that does not fit its cap in what is left of the budget (default 280 s) is
# not started and listed as cut by time; results are written after every side of every case, so a
# run killed from outside keeps what finished, and a failed case is reported, not fatal.
# On a lent GPU it is the second stage of benchmarks/gpu_run.sh (see docs/gpu-evidence.md).
#
# Installs nothing: it needs a Python with torch (CUDA build), diffusers 0.42.1, transformers,
# libcst, typer and rich already there ($PYTHON, else .venv/bin/python, else python3), and
# imports this checkout's codemods/, bot/ and tools/ from the source tree.
set -euo pipefail
source "$(dirname "$0")/gpu_python.sh"
REPORTS=${OUT:-$ROOT/docs}
mkdir -p "$REPORTS"

"$PYTHON" -m benchmarks.gpu_preflight gpu_scale "$@" || exit 2

exec "$PYTHON" -m benchmarks.gpu_scale --out "$REPORTS" "$@"
