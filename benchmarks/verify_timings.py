"""Where one `codemod verify --work-dir WORK --json REPORT` run spent its time, phase by phase.

    python -m benchmarks.verify_timings REPORT.json WORK   # from the project root

Prints the run's own phases (rewriting the copy, the targets, the checkout's tests), then per tree
its worker's start (interpreter and imports, the offline Hub, the device) and per target its phases
(build, the warm-up run that records lines, the census run, saving outputs, compile checks), from
the files the workers leave in WORK/runs. `benchmarks/gpu_verify.sh` prints this for each run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bot.verify.running.protocol import timings_path

SIDES = ("original", "rewritten")


def timings(report: dict[str, Any], work: Path) -> str:
    lines = [f"  total {report['seconds']:.1f} s: " + _phases(report.get("phases", {}))]
    for side in SIDES:
        for request in sorted((work / "runs" / side).glob("request-*")):
            started = timings_path(request)
            if started.is_file():
                lines.append(f"  {side} worker start: " + _phases(json.loads(started.read_text())))
            for result_file in sorted(request.glob("[0-9][0-9][0-9].json")):
                result = json.loads(result_file.read_text())
                lines.append(
                    f"  {side} {result['target']}: {result.get('seconds', 0):.2f} s: "
                    + _phases(result.get("phases", {}))
                )
    return "\n".join(lines)


def _phases(phases: dict[str, float]) -> str:
    return ", ".join(f"{name} {seconds:.2f} s" for name, seconds in phases.items()) or "(no phases recorded)"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    report, work = Path(argv[0]), Path(argv[1])
    try:
        print(timings(json.loads(report.read_text()), work))
    except (OSError, json.JSONDecodeError) as error:
        print(f"verify_timings: cannot read {report}: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
