"""Time of the verifier's environment and of diffusers' own tests on a real checkout (diffusers main).

    python benchmarks/own_tests.py CHECKOUT [--groups 6 | --file PATH ...] [--budget 150] [--torch-index URL] [--json FILE]

CHECKOUT is a diffusers checkout (with setup.py and tests/); it is only read: the trees are copies.
Measures, on this machine:
- the checkout's environment: a cold build (when the cache has none) and a cached lookup;
- the own-tests step for `--groups` fix groups (the bot's grouping, spread over rules and areas
  in a fixed order; or each `--file`, a path inside src/diffusers, as one group of every rule,
  which skips the grouping's engine runs): covering test modules, and the seconds for both trees;
- the own-tests step for every change of the whole checkout at once, within `--budget`.
Each line is printed as it is measured; `--json` keeps them all.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from bot.groups import PACKAGE_DIR, find_groups  # noqa: E402
from bot.verify.checkout.environment import TorchSource, environment_for  # noqa: E402
from bot.verify.checkout.own_tests import OwnTests, changed_files_tests  # noqa: E402
from bot.verify.planning.changes import rewrite_copy  # noqa: E402
from bot.verify.running.runner import worker_zygote  # noqa: E402
from codemods.project.test_modules import checkout_tests_of  # noqa: E402
from codemods.rules import all_rules  # noqa: E402


def measure_environment(checkout: Path, torch: TorchSource) -> tuple[Path, dict[str, float]]:
    started = time.monotonic()
    python = environment_for(checkout, torch, progress=lambda message: print(f"  {message}", flush=True))
    first = time.monotonic() - started
    started = time.monotonic()
    environment_for(checkout, torch)
    return python, {"first_call_s": round(first, 1), "cached_call_s": round(time.monotonic() - started, 4)}


def own_tests_of(
    python: Path, checkout: Path, files: list[Path], select: tuple[str, ...] | None, budget: float
) -> tuple[OwnTests, float]:
    """The own-tests step of `codemod verify` for these files, timed (the rewrite and the zygote's start included,
    the targets not)."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="codemod-own-tests-") as scratch:
        src = checkout / PACKAGE_DIR
        changes = rewrite_copy(src, Path(scratch), select=select, paths=tuple(files) or None)
        with worker_zygote(python, Path(scratch) / "zygote.txt") as zygote:
            result = changed_files_tests(
                checkout_tests_of(src), src, changes, Path(scratch) / "own-tests", python, budget, zygote=zygote
            )
    return result or OwnTests([], ""), time.monotonic() - started


def spread(groups: list[Any], count: int) -> list[Any]:
    """`count` groups in a fixed order, round-robin over (rule, area) so no one area fills the sample."""
    buckets: dict[tuple[str, str], list[Any]] = {}
    for group in sorted(groups, key=lambda g: g.id):
        buckets.setdefault((group.rule, group.family.split("/")[0]), []).append(group)
    chosen: list[Any] = []
    while len(chosen) < count and any(buckets.values()):
        for key in sorted(buckets):
            if buckets[key] and len(chosen) < count:
                chosen.append(buckets[key].pop(0))
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--groups", type=int, default=6)
    parser.add_argument("--file", action="append", default=[], help="A file inside src/diffusers, as one group.")
    parser.add_argument("--budget", type=float, default=150.0)
    parser.add_argument("--torch-index")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    checkout = args.checkout.resolve()
    figures: dict[str, Any] = {"checkout": str(checkout)}
    print(f"environment of {checkout}:", flush=True)
    python, figures["environment"] = measure_environment(checkout, TorchSource(index_url=args.torch_index))
    print(f"  {figures['environment']}", flush=True)
    if args.file:
        samples = [(path, [checkout / PACKAGE_DIR / path], None) for path in args.file]
    else:
        rules = tuple(rule.code for rule in all_rules())
        groups = spread(find_groups(checkout, rules, (), None, lambda message: None).groups, args.groups)
        samples = [(g.id, [checkout / path for path in sorted(g.files)], (g.rule,)) for g in groups]
    figures["groups"] = []
    for name, files, select in samples:
        result, seconds = own_tests_of(python, checkout, files, select, args.budget)
        row = {"group": name, "modules": result.modules, "line": result.line(), "seconds": round(seconds, 1)}
        row["tests_seconds"] = result.seconds
        figures["groups"].append(row)
        print(f"{name}: tests {result.seconds:.0f} s (with the rewrite {seconds:.0f} s), {result.modules}", flush=True)
        print(f"  {result.line()}", flush=True)
    result, seconds = own_tests_of(python, checkout, [], None, args.budget)
    figures["whole_checkout"] = {"modules": len(result.modules), "line": result.line(), "seconds": round(seconds, 1)}
    figures["whole_checkout"]["tests_seconds"] = result.seconds
    print(
        f"whole checkout: tests {result.seconds:.0f} s (with the rewrite {seconds:.0f} s), {len(result.modules)} module(s)"
    )
    print(f"  {result.line()}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
