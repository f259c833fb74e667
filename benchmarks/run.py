"""Speed of `codemod` on the whole installed diffusers, side by side with a bare parse and other tools.

    python benchmarks/run.py [--runs 3] [--skip-slow] [--profile] [--checkout PATH]

Every command runs as a fresh process on a private copy of the tree and is timed wall-clock;
the table shows medians of --runs runs and each median as a ratio to a bare `ast.parse` of the
same files on two processes (the floor for anything that parses Python). TorchFix and Fixit
(minutes per run) need their own environment, `.venv-bench` (`make benchmark` creates it);
`--skip-slow` leaves them out. `--profile` adds where a cold `codemod run --check` spends its time.
`--checkout PATH` (a diffusers main checkout, with `tests/`) adds a table for where
`codemod run src/diffusers` actually runs: cold, warm, the one-file hook and a rule selection new
to a warm cache, each run timed right after a floor run (the 2-process parse of src/diffusers), so
that its ratio holds on cores other work shares (`--only-checkout` leaves out the installed tree).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib.util
import io
import os
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
BENCH_BIN = PROJECT / ".venv-bench" / "bin"

PARSE = """
import ast, sys, pathlib
from multiprocessing import Pool
def parse(path):
    ast.parse(pathlib.Path(path).read_bytes())
files = [str(p) for p in pathlib.Path(sys.argv[2]).rglob("*.py")]
if sys.argv[1] == "1":
    for f in files:
        parse(f)
else:
    with Pool(int(sys.argv[1])) as pool:
        pool.map(parse, files, chunksize=16)
"""


@dataclass
class Measured:
    name: str
    seconds: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def timed(command: list[str], env: dict[str, str] | None = None, prepare: Callable[[], None] = lambda: None) -> float:
    """Wall-clock seconds of one run of `command`, after `prepare()` (not timed)."""
    prepare()
    start = time.perf_counter()
    subprocess.run(command, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def measure(name: str, command: list[str], runs: int, env: dict[str, str] | None = None) -> Measured:
    seconds = [timed(command, env) for _ in range(runs)]
    print(f"  {name}: {', '.join(f'{s:.2f}' for s in seconds)} s", file=sys.stderr)
    return Measured(name, seconds)


@dataclass
class Paired:
    """A command's times, each beside the floor (the 2-process parse of the same files) timed just before it:
    on cores shared with other work, a ratio of neighbours holds where absolute seconds do not."""

    name: str
    seconds: list[float]
    floors: list[float]
    cpu: list[float]  # CPU seconds (user + system, all processes): what other work on the cores cannot inflate
    floor_cpu: list[float]

    @property
    def ratio(self) -> float:
        return statistics.median(s / f for s, f in zip(self.seconds, self.floors))

    @property
    def cpu_ratio(self) -> float:
        return statistics.median(s / f for s, f in zip(self.cpu, self.floor_cpu))


def paired(
    name: str,
    command: list[str],
    floor: list[str],
    runs: int,
    env: dict[str, str] | None = None,
    prepare: Callable[[], None] = lambda: None,
) -> Paired:
    floors, seconds, floor_cpu, cpu = [], [], [], []
    for _ in range(runs):
        for times, cpu_times, args in ((floors, floor_cpu, (floor,)), (seconds, cpu, (command, env, prepare))):
            before = _children_cpu()
            times.append(timed(*args))
            cpu_times.append(_children_cpu() - before)
    shown = ", ".join(f"{s:.2f} (floor {f:.2f})" for s, f in zip(seconds, floors))
    print(f"  {name}: {shown} s", file=sys.stderr)
    return Paired(name, seconds, floors, cpu, floor_cpu)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def print_paired(title: str, results: list[Paired]) -> None:
    print(
        f"\n{title}\n\n| command | median (s) | min (s) | floor, median (s) | ratio to floor (wall) "
        "| CPU (s) | floor CPU (s) | ratio to floor (CPU) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for result in results:
        print(
            f"| {result.name} | {statistics.median(result.seconds):.2f} | {min(result.seconds):.2f} "
            f"| {statistics.median(result.floors):.2f} | {result.ratio:.2f}x | {statistics.median(result.cpu):.2f} "
            f"| {statistics.median(result.floor_cpu):.2f} | {result.cpu_ratio:.2f}x |"
        )


def checkout_results(checkout: Path, scratch: Path, runs: int) -> list[Paired]:
    """A diffusers main checkout, as `codemod run src/diffusers` runs there: its `tests/` (which DIF003 reads) and
    its pyproject.toml come along. Cold, warm, the one-file hook, and a selection new to a warm cache, each
    beside the parse of src/diffusers (what the issue's table calls the floor; tests/ adds a third to it)."""
    copy = scratch / "checkout"
    for part in ("src", "tests"):
        shutil.copytree(checkout / part, copy / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy(checkout / "pyproject.toml", copy / "pyproject.toml")
    tree = copy / "src" / "diffusers"
    files = list(tree.rglob("*.py"))
    tests = list((copy / "tests").rglob("*.py"))
    print(f"tree: diffusers checkout, {len(files)} files in src/diffusers, {len(tests)} in tests/", file=sys.stderr)
    cache, primed = scratch / "checkout-cache", scratch / "checkout-primed"
    warm_env = {"CODEMOD_CACHE_DIR": str(cache)}
    codemod = [str(BIN / "codemod"), "run", "--check"]
    subprocess.run([*codemod, str(tree)], env={**os.environ, **warm_env}, capture_output=True)  # prime
    shutil.copytree(cache, primed)

    def primed_cache() -> None:  # every run of the new selection starts from the cache of a full check
        shutil.rmtree(cache)
        shutil.copytree(primed, cache)

    first = scratch / "checkout-first"
    first_env = {"CODEMOD_CACHE_DIR": str(first)}

    def no_cache_yet() -> None:  # a user's first run: nothing cached, and it writes the cache a warm run reads
        shutil.rmtree(first, ignore_errors=True)

    floor = [sys.executable, "-c", PARSE, "2", str(tree)]
    hook_file = str(tree / "pipelines" / "t2i_adapter" / "pipeline_stable_diffusion_adapter.py")
    return [
        paired("ast.parse of src/diffusers and tests/, 2 processes", [sys.executable, "-c", PARSE, "2", str(copy)],
               floor, runs),
        paired("codemod --check, cold", [*codemod, "--no-cache", str(tree)], floor, runs),
        paired("codemod --check, first run (empty cache)", [*codemod, str(tree)], floor, runs, first_env,
               no_cache_yet),
        paired("codemod --check, warm cache", [*codemod, str(tree)], floor, runs, warm_env),
        paired("hook: codemod on 1 file, warm cache", [*codemod, hook_file], floor, runs, warm_env),
        paired("codemod --check --select DIF004, new to a warm cache", [*codemod, "--select", "DIF004", str(tree)],
               floor, runs, warm_env, primed_cache),
    ]  # fmt: skip


def installed_diffusers() -> Path:
    spec = importlib.util.find_spec("diffusers")
    if spec is None or spec.origin is None:
        sys.exit("benchmarks/run.py: diffusers is not installed in this environment (run `make install`)")
    return Path(spec.origin).parent


def profile_cold_run(tree: Path) -> str:
    """Where one single-process cold `--check` spends its time (cumulative, top entries)."""
    from codemods.engine.entry import Mode, RunOptions, run

    gc.disable()  # as in the scan workers: the collector is what would dominate this in-process run
    profiler = cProfile.Profile()
    profiler.enable()
    run(RunOptions(paths=(tree,), mode=Mode.CHECK, jobs=1))
    profiler.disable()
    gc.enable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(15)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-slow", action="store_true", help="leave out TorchFix and Fixit (minutes per run)")
    parser.add_argument("--profile", action="store_true", help="profile one cold run")
    parser.add_argument("--checkout", type=Path, help="a diffusers main checkout (with tests/) to time as well")
    parser.add_argument("--only-checkout", action="store_true", help="time the checkout alone")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        if args.checkout is not None:
            measured = checkout_results(args.checkout, Path(scratch), args.runs)
            print_paired("diffusers main checkout (`codemod run src/diffusers`)", measured)
            if args.only_checkout:
                return
        tree = Path(scratch) / "diffusers"
        shutil.copytree(installed_diffusers(), tree, ignore=shutil.ignore_patterns("__pycache__"))
        files = list(tree.rglob("*.py"))
        lines = sum(p.read_bytes().count(b"\n") for p in files)
        print(f"tree: diffusers (installed), {len(files)} files, {lines:,} lines; {os.cpu_count()} cores", file=sys.stderr)
        cache = Path(scratch) / "cache"
        warm_env = {"CODEMOD_CACHE_DIR": str(cache)}
        codemod = [str(BIN / "codemod"), "run", "--check"]
        hook_file = str(tree / "pipelines" / "t2i_adapter" / "pipeline_stable_diffusion_adapter.py")
        subprocess.run([*codemod, str(tree)], env={**os.environ, **warm_env}, capture_output=True)  # prime

        results = [
            measure("ast.parse, 2 processes", [sys.executable, "-c", PARSE, "2", str(tree)], args.runs),
            measure("ast.parse, 1 process", [sys.executable, "-c", PARSE, "1", str(tree)], args.runs),
            measure("codemod --check, cold", [*codemod, "--no-cache", str(tree)], args.runs),
            measure("codemod --check, warm cache", [*codemod, str(tree)], args.runs, warm_env),
            measure("hook: codemod on 1 file, warm cache", [*codemod, hook_file], args.runs, warm_env),
            measure("hook: codemod on 1 file, no cache", [*codemod, "--no-cache", hook_file], args.runs),
            measure("ruff check --select ALL", [str(BIN / "ruff"), "check", "--select", "ALL", "--no-cache",
                                                "--isolated", "--exit-zero", "--quiet", str(tree)], args.runs),
        ]
        if not args.skip_slow:
            if not (BENCH_BIN / "torchfix").exists():
                sys.exit("benchmarks/run.py: TorchFix/Fixit need .venv-bench (`make benchmark`), or pass --skip-slow")
            results.append(measure("TorchFix 0.7.0", [str(BENCH_BIN / "torchfix"), str(tree)], args.runs))
            results.append(measure("Fixit 2.2.1", [str(BENCH_BIN / "fixit"), "lint", str(tree)], args.runs))

        floor = results[0].median
        print("\n| command | median (s) | runs | ratio to ast.parse on 2 processes |\n|---|---:|---:|---:|")
        for result in results:
            print(f"| {result.name} | {result.median:.2f} | {len(result.seconds)} | {result.median / floor:.2f}x |")
        cold, warm = results[2].median, results[3].median
        print(f"\ncold codemod / 2-process parse: {cold / floor:.2f}x (target <= 3x)")
        print(f"warm / cold: {warm / cold:.3f}x (target <= 0.1x), warm {warm:.2f} s (target < 1 s)")
        print(f"hook on one file (warm cache): {results[4].median:.2f} s (target <= 0.5 s)")
        if args.profile:
            print("\nWhere a cold run spends its time (one process, cProfile, by own time):\n")
            print(profile_cold_run(tree))


if __name__ == "__main__":
    main()
