"""The emulated census of checkout-test targets, per unit, in the interpreter that runs this script.

    PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=CHECKOUT/src:. ENV_PYTHON -m benchmarks.target_census CHECKOUT TARGET...

TARGET as the verifier names them (`tests/pipelines/lumina2/test_pipeline_lumina2.py::Lumina2PipelineFastTests`).
Builds each on the emulated device, warms it up once, and prints h2d, d2h and syncs per unit with the
transformers version, to hold next to a CUDA report's `before` counts (the checkout is only read).
The census of one tree, with no rewrite: how the emulator's counts were checked against the H200's
(issue 21): with transformers 5.17.0, as on the H200, CogView4, HunyuanVideo and Lumina2 count what
CUDA counted there.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    from bot.verify.targets.offline_hub import go_offline

    go_offline()  # before diffusers and transformers are imported
    import torch
    import transformers

    from bot.verify.census.emulated import SyncCensus
    from bot.verify.census.emulated_device import install_emulated_device
    from bot.verify.targets.from_tests import spec_for

    checkout = Path(argv[0]).resolve()
    device = install_emulated_device()
    for name in argv[1:]:
        workload = spec_for(name, checkout / "tests").build(device)
        torch.manual_seed(0)
        workload.run()
        torch.manual_seed(0)
        with SyncCensus(site_roots=[checkout / "src" / "diffusers"]) as census:
            workload.run()
        per_unit = {kind: round(count / workload.units, 4) for kind, count in census.result().counts.items()}
        print(f"{name}: {per_unit} per {workload.unit} (transformers {transformers.__version__})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
