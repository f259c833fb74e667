"""The emulated device against CUDA, target by target: what a GPU run would have said differently.

    python benchmarks/emu_vs_cuda.py compare EMU.json CUDA.json
    python benchmarks/emu_vs_cuda.py run SRC [--out DIR] [-- ARGS FOR codemod verify]

`compare` reads two reports of `codemod verify --json` (one per device). `run` makes them: it runs
`codemod verify SRC --device emu` and then `--device cuda` with the same arguments (`--select`,
`--path`, `--python`...), writes `emu.json` and `cuda.json` to --out, and compares them. Both print,
per target the two reports share, every difference in copies (h2d, d2h), syncs and output objects
per unit, before and after the rewrite, and in the verdict; a count that differs by the same amount
before and after is marked "same change" (the absolute count differs, the change measured does
not). Then the targets only one device ran, and one summary line. Exit 1 when a verdict differs,
else 0: this is the check to rerun whenever a GPU is available.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

METRICS = ("h2d", "d2h", "sync", "outputs")


def differences(emu: dict[str, Any], cuda: dict[str, Any]) -> list[str]:
    """One line per difference of one target's two results, verdict first."""
    lines = []
    if emu["verdict"] != cuda["verdict"]:
        lines.append(f"verdict: emu {emu['verdict']}{_why(emu)}, cuda {cuda['verdict']}{_why(cuda)}")
    for metric in METRICS:
        sides = [(side, (result.get(side) or {}).get(metric)) for result in (emu, cuda) for side in ("before", "after")]
        (_, emu_before), (_, emu_after), (_, cuda_before), (_, cuda_after) = sides
        if (emu_before, emu_after) == (cuda_before, cuda_after):
            continue
        same_change = None not in (emu_before, emu_after, cuda_before, cuda_after) and round(
            emu_after - emu_before, 4
        ) == round(cuda_after - cuda_before, 4)
        lines.append(
            f"{metric} per {emu.get('unit') or cuda.get('unit')}: emu {_count(emu_before)} -> {_count(emu_after)},"
            f" cuda {_count(cuda_before)} -> {_count(cuda_after)}" + (" (same change)" if same_change else "")
        )
    return lines


def comparison(emu_report: dict[str, Any], cuda_report: dict[str, Any]) -> tuple[str, int]:
    """The printed comparison of two reports and the number of targets whose verdicts differ."""
    emu = {result["target"]: result for result in emu_report["targets"]}
    cuda = {result["target"]: result for result in cuda_report["targets"]}
    both = [name for name in emu if name in cuda]
    text, identical, verdicts = [], 0, 0
    with_verdict = [name for name in both if "unverified" not in (emu[name]["verdict"], cuda[name]["verdict"])]
    for name in both:
        found = differences(emu[name], cuda[name])
        if not found:
            identical += 1
            continue
        verdicts += emu[name]["verdict"] != cuda[name]["verdict"]
        text.append(name)
        text.extend(f"  {line}" for line in found)
    for device, mine, other in (("emu", emu, cuda), ("cuda", cuda, emu)):
        for name in mine:
            if name not in other:
                text.append(f"{name}\n  only on {device}: {mine[name]['verdict']}")
    text.append(
        f"{len(both)} targets in both reports ({len(with_verdict)} with a verdict on both), {identical} identical,"
        f" {len(both) - identical} differ, {verdicts} verdict difference(s);"
        f" only on emu: {sum(n not in cuda for n in emu)}, only on cuda: {sum(n not in emu for n in cuda)}"
    )
    return "\n".join(text), verdicts


def _why(result: dict[str, Any]) -> str:
    return f" ({result['error']})" if result.get("error") and result["verdict"] != "verified" else ""


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _run(src: str, out: Path, passed: list[str]) -> tuple[Path, Path]:
    """`codemod verify SRC` on each device with the same arguments; the two reports' paths."""
    out.mkdir(parents=True, exist_ok=True)
    reports = []
    for device in ("emu", "cuda"):
        report = out / f"{device}.json"
        command = [sys.executable, "-m", "codemod_cli", "verify", src, *passed, "--device", device, "--json", str(report)]
        print(f"emu_vs_cuda: {' '.join(command[1:])}", file=sys.stderr, flush=True)
        finished = subprocess.run(command, check=False)
        if finished.returncode not in (0, 1) or not report.is_file():
            sys.exit(f"emu_vs_cuda: codemod verify --device {device} exited {finished.returncode} (see above)")
        reports.append(report)
    return reports[0], reports[1]


def main(argv: list[str]) -> int:
    own, passed = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    compare = commands.add_parser("compare", help="compare two reports of codemod verify --json")
    compare.add_argument("emu", type=Path)
    compare.add_argument("cuda", type=Path)
    run = commands.add_parser("run", help="run codemod verify on emu and on cuda, then compare")
    run.add_argument("src")
    run.add_argument("--out", type=Path, default=Path("emu-vs-cuda"), help="where emu.json and cuda.json go")
    args = parser.parse_args(own)
    if args.command == "compare" and passed:
        parser.error("arguments after -- go to codemod verify, which `compare` does not run")
    paths = (args.emu, args.cuda) if args.command == "compare" else _run(args.src, args.out, passed)
    try:
        emu_report, cuda_report = (json.loads(Path(path).read_text()) for path in paths)
    except (OSError, json.JSONDecodeError) as error:
        print(f"emu_vs_cuda: cannot read a report: {error}", file=sys.stderr)
        return 2
    text, verdicts = comparison(emu_report, cuda_report)
    print(text)
    return 1 if verdicts else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
