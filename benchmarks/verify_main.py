"""The whole verifier on a real diffusers checkout (diffusers main): coverage by rule and by reason, and timings.

    python benchmarks/verify_main.py CHECKOUT [--out DIR] [-- ARGS FOR codemod verify]

CHECKOUT is a diffusers checkout (`src/diffusers` and `tests/`); it is only read, the verifier
works on copies. Runs `codemod verify CHECKOUT/src/diffusers` once with this interpreter (`make
verify-main CHECKOUT=...` uses the project's), nice'd, then prints and writes to --out:
- `report.json`: the verifier's report;
- `coverage.json` and `coverage.md`: changes by verdict, per rule, the unverified ones by reason
  (see `bot.verify.judging.coverage`), and the timings: the whole run, the slowest targets.
Arguments after `--` go to `codemod verify` as they are (`--device`, `--select`, `--python`...).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from bot.verify.judging.coverage import Coverage, coverage_of


def main(argv: list[str]) -> int:
    own, _, passed = _split(argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--out", type=Path, default=Path("verify-main"), help="where the report and figures go")
    args = parser.parse_args(own)
    src = args.checkout / "src" / "diffusers"
    if not (src / "__init__.py").is_file() or not (args.checkout / "tests").is_dir():
        parser.error(f"{args.checkout} is not a diffusers checkout (needs src/diffusers and tests/)")
    args.out.mkdir(parents=True, exist_ok=True)
    report_path = args.out / "report.json"
    command = [sys.executable, "-m", "codemod_cli", "verify", str(src), "--json", str(report_path), *passed]
    print("$ " + " ".join(command), flush=True)
    started = time.monotonic()
    done = subprocess.run(
        ["nice", "-n", "10", *command], env={**os.environ, "OMP_NUM_THREADS": "1"}, cwd=PROJECT, check=False
    )
    wall = time.monotonic() - started
    if not report_path.is_file():
        print(f"verify-main: codemod verify exited {done.returncode} without a report", file=sys.stderr)
        return 2
    report = json.loads(report_path.read_text())
    coverage, timings = coverage_of(report), _timings(report, wall)
    (args.out / "coverage.json").write_text(json.dumps({**coverage.to_json(), "timings": timings}, indent=2))
    markdown = _markdown(report, coverage, timings)
    (args.out / "coverage.md").write_text(markdown + "\n")
    print(markdown)
    return 0


def _split(argv: list[str]) -> tuple[list[str], str, list[str]]:
    if "--" in argv:
        index = argv.index("--")
        return argv[:index], "--", argv[index + 1 :]
    return argv, "", []


def _timings(report: dict[str, Any], wall: float) -> dict[str, Any]:
    measured = [t for t in report["targets"] if t.get("seconds")]
    slowest = sorted(measured, key=lambda t: t["seconds"], reverse=True)[:10]
    return {
        "wall_s": round(wall, 1),
        "verify_s": round(report.get("seconds", 0.0), 1),
        "phases_s": report.get("phases", {}),
        "targets_measured": len(measured),
        "target_s_both_trees": round(sum(t["seconds"] for t in measured), 1),
        "slowest": [{"target": t["target"], "seconds": t["seconds"]} for t in slowest],
    }


def _markdown(report: dict[str, Any], coverage: Coverage, timings: dict[str, Any]) -> str:
    versions = report.get("versions", {})
    phases = ", ".join(f"{phase} {seconds:.0f} s" for phase, seconds in timings["phases_s"].items()) or "no phases"
    headline = (
        f"diffusers {versions.get('diffusers', '?')}, torch {versions.get('torch', '?')}, "
        f"device {report.get('device')}: {coverage.total} changes, "
        f"{coverage.with_verdict:.0%} with a verdict other than unverified; "
        f"{timings['wall_s']:.0f} s in all ({phases}; {timings['target_s_both_trees']:.0f} s of worker time in "
        f"{timings['targets_measured']} targets, both trees)."
    )
    return f"{headline}\n\n{coverage.to_markdown()}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
