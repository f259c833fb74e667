"""What `make demo` prints last: the findings a fresh `codemod run --check --format json` still reports
after the fixes, by rule, split by why each is left.

    codemod run --check --format json TREE | python -m tools.demo_summary

- report only: the rule offers no fix for it (DIF007's syncs, most of DIF006);
- fix declined: a fix exists in principle, the engine declined it here, and says why (`--check` lists
  the reason after the message);
- fixable: a fix is offered now (found only once the first fixes were in: run the fixes again).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Any

COLUMNS = ("left", "report only", "fix declined", "fixable")


def why_left(finding: dict[str, Any]) -> str:
    if finding["fix_safety"] != "none":
        return "fixable"
    return "fix declined" if finding.get("not_fixed_reason") else "report only"


def summary_table(report: dict[str, Any]) -> str:
    counts: Counter[tuple[str, str]] = Counter()
    for finding in report["findings"]:
        counts[finding["code"], "left"] += 1
        counts[finding["code"], why_left(finding)] += 1
    codes = sorted({code for code, _ in counts})
    rows = [("rule", *COLUMNS)]
    rows += [(code, *(str(counts[code, column]) for column in COLUMNS)) for code in codes]
    rows.append(("total", *(str(sum(counts[code, column] for code in codes)) for column in COLUMNS)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [row[0].ljust(widths[0]) + "".join(f"  {cell.rjust(w)}" for cell, w in zip(row[1:], widths[1:])) for row in rows]
    return "\n".join(lines) + "\n"


def main() -> int:
    sys.stdout.write(summary_table(json.load(sys.stdin)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
