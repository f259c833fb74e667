"""What the emulated accelerator costs: Python overhead per op, and one pipeline call, against the CPU.

    python benchmarks/emulated_device.py [--runs 5] [--ops 20000]

Every op on the `emu` device runs the CPU kernel plus the emulation's bookkeeping (unwrap the
arguments, check devices, wrap the results, tell the census); the verifier pays it in every
target. Two measures, medians of --runs: a loop of small ops (linear, multiply, cat, slice) where
the kernels cost almost nothing, so the difference per op is the emulation's overhead; and the
built-in Stable Diffusion target's call (3 steps), whole, on both devices. Run with
`OMP_NUM_THREADS=1` on idle cores.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from bot.verify.census.emulated_device import install_emulated_device
from bot.verify.targets import get_target

OPS_PER_ROUND = 4  # linear, mul, cat, slice


def small_ops_seconds(device: torch.device, rounds: int) -> float:
    x, weight = torch.randn(4, 4, device=device), torch.randn(4, 4, device=device)
    started = time.perf_counter()
    for _ in range(rounds):
        x = torch.nn.functional.linear(x, weight) * 0.5
        x = torch.cat([x, x])[2:6]
    return time.perf_counter() - started


def pipeline_seconds(device: torch.device) -> float:
    torch.manual_seed(0)
    workload = get_target("StableDiffusionPipeline").build(device)
    workload.run()  # warm-up, as the verifier does
    started = time.perf_counter()
    workload.run()
    return time.perf_counter() - started


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--ops", type=int, default=20_000, help="small ops per run")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    devices = {"cpu": torch.device("cpu"), "emu": install_emulated_device()}
    rounds = args.ops // OPS_PER_ROUND
    per_op = {
        name: statistics.median(small_ops_seconds(device, rounds) for _ in range(args.runs)) / args.ops * 1e6
        for name, device in devices.items()
    }
    call = {
        name: statistics.median(pipeline_seconds(device) for _ in range(args.runs)) for name, device in devices.items()
    }
    print("| measure | cpu | emu | emulation's share |")
    print("|---|---:|---:|---:|")
    print(
        f"| small op (us) | {per_op['cpu']:.1f} | {per_op['emu']:.1f} | {per_op['emu'] - per_op['cpu']:.1f} us an op |"
    )
    print(
        f"| Stable Diffusion target, one call (ms) | {call['cpu'] * 1e3:.0f} | {call['emu'] * 1e3:.0f} "
        f"| {call['emu'] / call['cpu']:.2f}x |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
