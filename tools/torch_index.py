"""Where `make` installs torch's CPU build from: the `pip install` arguments to print.

PyPI's Linux wheel of torch is the multi-GB CUDA build; the CPU build lives on PyTorch's own index.
A machine whose pip already finds a local CPU wheel of the pin without any index (`find-links`, as on
an offline machine with a wheel directory) keeps pip's own configuration, which needs no network:

    python -m tools.torch_index torch==2.13.0    # prints `--index-url https://download.pytorch.org/whl/cpu`, or nothing
"""

from __future__ import annotations

import json
import subprocess
import sys

CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def local_cpu_build(requirement: str) -> bool:
    """Whether pip, with no index at all, would install a `+cpu` build of `requirement`."""
    dry_run = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--no-index", "--no-deps"]
    done = subprocess.run(
        [*dry_run, "--ignore-installed", "--report", "-", requirement], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return False
    return any(item["metadata"]["version"].endswith("+cpu") for item in json.loads(done.stdout)["install"])


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tools.torch_index REQUIREMENT", file=sys.stderr)
        return 2
    print("" if local_cpu_build(argv[0]) else f"--index-url {CPU_INDEX}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
