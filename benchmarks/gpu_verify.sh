#!/usr/bin/env bash
# The verifier's CUDA path, once, on a machine with a GPU: DIF001 on QwenImage as it was before
# diffusers #13406 (fixture case DIF001/qwenimage_rope_pr13406) and on NucleusMoE as installed diffusers 0.42.1 has it.
#
#   benchmarks/gpu_verify.sh              # reports go to $OUT (the device runner's folder) or ./gpu-verify
#   DEVICE=emu benchmarks/gpu_verify.sh   # the same runs on the emulated device (no GPU), to try it
#
# Installs nothing: it needs a Python with torch (CUDA build), diffusers 0.42.1, transformers,
# libcst, typer and rich already there ($PYTHON, else .venv/bin/python, else python3), and
# imports this checkout's codemods/ and bot/ from the source tree. It prints how long each step
# took, and for each verify run its phases (benchmarks/verify_timings.py): the workers' start
# (interpreter and imports, the offline Hub, the device) and each target's build, warm-up,
# census run and saving. Goal: under 3 minutes on one GPU.
set -euo pipefail
source "$(dirname "$0")/gpu_python.sh"
REPORTS=${OUT:-$ROOT/gpu-verify}
DEVICE=${DEVICE:-cuda}
mkdir -p "$REPORTS"
STARTED=$EPOCHREALTIME
step_started=$STARTED
took() {  # what just finished: the seconds since the previous step
    awk -v what="$1" -v since="$step_started" -v now="$EPOCHREALTIME" 'BEGIN { printf "gpu_verify: %s: %.1f s\n", what, now - since }'
    step_started=$EPOCHREALTIME
}

DEVICE=$DEVICE "$PYTHON" - <<'EOF' || exit 2
import importlib.util, sys
missing = [m for m in ("torch", "diffusers", "transformers", "libcst", "typer", "rich") if importlib.util.find_spec(m) is None]
if missing:
    sys.exit(f"gpu_verify: missing Python packages: {', '.join(missing)} (this script installs nothing)")
import os, re, torch
from pathlib import Path
if os.environ["DEVICE"] == "cuda" and not torch.cuda.is_available():
    sys.exit(f"gpu_verify: torch {torch.__version__} sees no CUDA device")
device = torch.cuda.get_device_name(0) if os.environ["DEVICE"] == "cuda" else os.environ["DEVICE"]
# The version from the package's source: importing diffusers costs seconds, and a copied package may lack metadata.
init = Path(importlib.util.find_spec("diffusers").origin).read_text()
version = re.search(r"^__version__ = \"([^\"]+)\"", init, re.MULTILINE).group(1)
print(f"gpu_verify: torch {torch.__version__}, CUDA {torch.version.cuda}, {device}, diffusers {version}")
if version != "0.42.1":
    sys.exit(f"gpu_verify: the QwenImage fixture case patches diffusers 0.42.1's file; installed is {version}")
EOF
took "checking the environment (imports torch)"

SRC=$("$PYTHON" -c "from codemods.project.index import installed_diffusers; print(installed_diffusers())")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-verify.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
QWEN=models/transformers/transformer_qwenimage.py
NUCLEUS=models/transformers/transformer_nucleusmoe_image.py

# QwenImage before #13406: the installed package with that PR's hunks reverted in one file
# (the fixture case DIF001/qwenimage_rope_pr13406 materialises that file).
mkdir -p "$WORK/qwen-before-13406"
cp -r "$SRC" "$WORK/qwen-before-13406/diffusers"
find "$WORK/qwen-before-13406" -name __pycache__ -prune -exec rm -rf {} +
"$PYTHON" -m tools.fixture_cases write DIF001/qwenimage_rope_pr13406 "$WORK/qwen-case" > /dev/null
cp "$WORK/qwen-case/diffusers/$QWEN" "$WORK/qwen-before-13406/diffusers/$QWEN"
took "preparing the QwenImage tree before #13406"

status=0
verify() {  # name, tree, file the engine may rewrite
    echo "=== $1"
    "$PYTHON" -m codemod_cli verify "$2" --select DIF001 --path "$2/$3" --device "$DEVICE" \
        --json "$REPORTS/$1.json" --markdown "$REPORTS/$1.md" --work-dir "$WORK/$1-work" || status=$?
    took "verify $1"
    "$PYTHON" -m benchmarks.verify_timings "$REPORTS/$1.json" "$WORK/$1-work" || true
    for side in original rewritten; do  # the Chrome traces, to open in Perfetto
        for trace in "$WORK/$1-work/runs/$side"/request-*/*.trace.json; do
            if [[ -e "$trace" ]]; then cp "$trace" "$REPORTS/$1-$side-$(basename "$trace")"; fi
        done
    done
}
verify qwenimage-before-13406 "$WORK/qwen-before-13406/diffusers" "$QWEN"
verify nucleusmoe "$SRC" "$NUCLEUS"
step_started=$STARTED
took "reports in $REPORTS (exit $status), all steps"
exit $status
