# Sourced by the GPU scripts (gpu_verify.sh, gpu_scale.sh): from the repository root, the interpreter
# that runs them ($PYTHON, else .venv/bin/python, else python3) importing this checkout's own code.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
if [[ -n "${PYTHON:-}" ]]; then :
elif [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python
else PYTHON=python3
fi
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
