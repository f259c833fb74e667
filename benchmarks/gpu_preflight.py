"""Before a GPU run: the packages it needs are there, torch sees a CUDA device, and diffusers is the release the fixture patches.

python -m benchmarks.gpu_preflight NAME [RUN_ARGS...]

NAME prefixes the messages; exit 2 with one line when a check fails. RUN_ARGS are the run's own
arguments: with `--device cpu` (gpu_scale's machinery tried without a GPU) no CUDA device is asked for.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

from tools.gpu_bundle import DIFFUSERS

NEEDED = ("torch", "diffusers", "transformers", "libcst", "typer", "rich")


def main(argv: list[str]) -> int:
    name = argv[0] if argv else "gpu"
    run = argparse.ArgumentParser(add_help=False)
    run.add_argument("--device", default="cuda")
    device = run.parse_known_args(argv[1:])[0].device
    missing = [module for module in NEEDED if importlib.util.find_spec(module) is None]
    if missing:
        return _fail(f"{name}: missing Python packages: {', '.join(missing)} (this script installs nothing)")
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        return _fail(f"{name}: no CUDA device (torch {torch.__version__} sees none); this run needs one")
    import diffusers

    where = torch.cuda.get_device_name(0) if device == "cuda" else device
    print(
        f"{name}: torch {torch.__version__}, CUDA {torch.version.cuda}, {where}, diffusers {diffusers.__version__}",
        flush=True,
    )
    if diffusers.__version__ != DIFFUSERS:
        return _fail(
            f"{name}: the QwenImage fixture case patches diffusers {DIFFUSERS}'s file; installed is {diffusers.__version__}"
        )
    return 0


def _fail(message: str) -> int:
    print(message, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
