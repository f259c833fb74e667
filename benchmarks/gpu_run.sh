#!/usr/bin/env bash
# Everything a lent GPU machine is for, in one command (issue 35), on a bare machine with the bundle
# that `make gpu-bundle` gathered carried along:
#
#   benchmarks/gpu_run.sh [BUNDLE [GPU_SCALE_ARGS...]]   # BUNDLE: .gpu-bundle; results under $OUT, else ./gpu-run
#
# A second try can aim at what the first left out: `MAIN_SUBSET_S=0 benchmarks/gpu_run.sh .gpu-bundle
# --group regional-compile --group sync-rules-compiled` (GPU_SCALE_ARGS go to gpu_scale.sh).
#
# Within BUDGET_S seconds (default 400: with the machine's start and the transfers, under 8 minutes
# of device time, which leaves a second try in the 15), stage by stage:
#   1. install the bundle into the interpreter's own site-packages (the verifier's workers do not
#      inherit PYTHONPATH), at most 60 s;
#   2. benchmarks/gpu_scale.sh: the real-scale groups in priority order, with all that is left but
#      MAIN_SUBSET_S (default 90) for stage 3; it stops the run here (exit 2) on a machine without CUDA;
#   3. `codemod verify --device cuda` on the main subset (the 22 files of benchmarks/main_subset.txt,
#      the 2026-12-04 run's) of the diffusers main checkout in the bundle, then the same on the
#      emulated device and the comparison (benchmarks/emu_vs_cuda.py) if time is left for it.
# Results, written as they come, in the layout docs/ keeps (copy them in as they are):
#   $OUT/gpu-evidence.md (docs/gpu-evidence.md; in the run folder until the scale stage ends) and
#   $OUT/gpu-runs/DATE/: gpu-scale.json, gpu-run.log, main-subset.{cuda.json,cuda.md,emu.json,compare.txt}.
set -uo pipefail
source "$(dirname "$0")/gpu_python.sh"
BUNDLE=$(realpath "${1:-.gpu-bundle}")
(($#)) && shift
BUDGET_S=${BUDGET_S:-400}
MAIN_SUBSET_S=${MAIN_SUBSET_S:-90}
INSTALL_S=60
OUT=${OUT:-$ROOT/gpu-run}
RUN=$OUT/gpu-runs/$(date -u +%F)
mkdir -p "$RUN"
exec > >(tee -a "$RUN/gpu-run.log") 2>&1
export PYTHONUNBUFFERED=1
STARTED=$SECONDS
left() { echo $((BUDGET_S - (SECONDS - STARTED))); }
say() { echo "gpu_run: [$((SECONDS - STARTED)) s] $*"; }

say "budget ${BUDGET_S} s; $PYTHON; bundle $BUNDLE"
[[ -d $BUNDLE ]] || { say "no bundle at $BUNDLE: run make gpu-bundle where PyPI is reachable, and carry it"; exit 2; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || say "no nvidia-smi"
timeout "$INSTALL_S" "$PYTHON" -m tools.gpu_bundle install "$BUNDLE" || { say "install failed"; exit 2; }
say "installed"

scale_s=$(($(left) - MAIN_SUBSET_S))
say "gpu_scale: ${scale_s} s"
# gpu_scale's own budget stops starting cases in time; the timeout, 20 s later, is for a case that overruns.
OUT=$RUN timeout --kill-after=5 $((scale_s + 20)) benchmarks/gpu_scale.sh --budget "$scale_s" "$@"
status=$?
if [[ $status == 2 ]]; then say "gpu_scale.sh stopped before measuring (exit 2): nothing else can run"; exit 2; fi
say "gpu_scale: exit $status"
if [[ -e $RUN/gpu-evidence.md ]]; then mv "$RUN/gpu-evidence.md" "$OUT/gpu-evidence.md"; fi

if ((MAIN_SUBSET_S == 0)); then say "main subset: not asked for (MAIN_SUBSET_S=0)"; exit $status; fi
if [[ ! -e $BUNDLE/diffusers-main.tar.gz ]]; then
    say "main subset: not run, the bundle has no diffusers-main.tar.gz (make gpu-bundle CHECKOUT=...)"; exit $status
fi
MAIN=$(mktemp -d "${TMPDIR:-/tmp}/gpu-run-main.XXXXXX")
trap 'rm -rf "$MAIN"' EXIT
tar -xzf "$BUNDLE/diffusers-main.tar.gz" -C "$MAIN"
# Absolute paths: --path relative to the current directory names the wrong tree.
paths=()
while read -r file; do paths+=(--path "$MAIN/src/diffusers/$file"); done < benchmarks/main_subset.txt
subset() {  # device, seconds
    say "main subset on $1: $2 s"
    # Neither the checkout's own tests nor its repository checks: their tools are not installed there.
    (cd "$MAIN" && timeout --kill-after=5 "$2" "$PYTHON" -m codemod_cli verify src/diffusers --device "$1" --no-tests \
        --no-repo-checks --python "$PYTHON" --select DIF001,DIF002,DIF005,DIF006 "${paths[@]}" \
        --json "$RUN/main-subset.$1.json" --markdown "$RUN/main-subset.$1.md")
    say "main subset on $1: exit $?"
}
if (($(left) < 30)); then say "main subset: not run, $(left) s left"; exit $status; fi
subset cuda "$(left)"
# The emulated side needs no GPU: when it does not fit here, run it on any machine and compare there.
if (($(left) >= 60)) && [[ -e $RUN/main-subset.cuda.json ]]; then
    subset emu "$(left)"
    rm -f "$RUN/main-subset.emu.md"
    if [[ -e $RUN/main-subset.emu.json ]]; then
        "$PYTHON" benchmarks/emu_vs_cuda.py compare "$RUN/main-subset.emu.json" "$RUN/main-subset.cuda.json" \
            > "$RUN/main-subset.compare.txt"
        say "emu against cuda: $(tail -n 1 "$RUN/main-subset.compare.txt")"
    fi
else
    say "main subset on emu: not run, $(left) s left; compare on the CPU with benchmarks/emu_vs_cuda.py"
fi
say "done; results in $OUT"
exit $status
