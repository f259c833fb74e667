"""`make demo`'s rewrite: one engine run over the demo tree (safe and unsafe fixes), told on one screen.

    python -m tools.demo_summary demo      # rewrites demo/src/diffusers in place

It prints what was found and fixed, by rule; the first hunks of the diff, whole; and why fixes were
declined, the most frequent reasons first. Every line of the diff goes to `demo/fixes.diff` and every
finding left, each with its reason, to `demo/remaining.txt`. A finding left is one of

- report only: the rule offers no fix for it (DIF007's syncs, most of DIF006);
- fix declined: a fix exists in principle, the engine declined it here, and says why;
- fixable: a fix is offered now (found only once the first fixes were in: run the fixes again).
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from codemods.engine.cache import cache_directory
from codemods.engine.entry import Progress
from codemods.engine.entry import run as run_engine
from codemods.engine.run_result import Mode, RunOptions
from codemods.output.report import display_path, summary_line, summary_notes, text_lines, unified_diff

COLUMNS = ("found", "fixed", "left", "report only", "fix declined", "fixable")
DIFF_LINES = 60
TOP_REASONS = 8
REASON_WIDTH = 100


def why_left(finding: dict[str, Any]) -> str:
    if finding["fix_safety"] != "none":
        return "fixable"
    return "fix declined" if finding.get("not_fixed_reason") else "report only"


def summary_table(findings: list[dict[str, Any]]) -> str:
    """Per rule: findings, fixed, and the ones left split by why."""
    counts: Counter[tuple[str, str]] = Counter()
    for finding in findings:
        counts[finding["code"], "found"] += 1
        counts[finding["code"], "fixed" if finding["fixed"] else "left"] += 1
        if not finding["fixed"]:
            counts[finding["code"], why_left(finding)] += 1
    codes = sorted({code for code, _ in counts})
    rows = [("rule", *COLUMNS)]
    rows += [(code, *(str(counts[code, column]) for column in COLUMNS)) for code in codes]
    rows.append(("total", *(str(sum(counts[code, column] for code in codes)) for column in COLUMNS)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [row[0].ljust(widths[0]) + "".join(f"  {cell.rjust(w)}" for cell, w in zip(row[1:], widths[1:])) for row in rows]
    return "\n".join(lines) + "\n"


_HUNK = re.compile(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def hunks(diff: str) -> list[list[str]]:
    """A unified diff's hunks, each led by its file's `---`/`+++` lines when it is the file's first.

    Each hunk ends where the line counts of its `@@ -a,b +c,d @@` line say, so a removed line that
    reads `-- x` is never taken for the next file's header.
    """
    lines = diff.splitlines(keepends=True)
    found: list[list[str]] = []
    header: list[str] = []
    i = 0
    while i < len(lines):
        match = _HUNK.match(lines[i])
        if match is None:
            header.append(lines[i])
            i += 1
            continue
        old, new = (int(size) if size is not None else 1 for size in match.groups())
        end = i + 1
        while old > 0 or new > 0:
            marker = lines[end][:1]
            old -= marker != "+"
            new -= marker != "-"
            end += 1
        found.append([*header, *lines[i:end]])
        header = []
        i = end
    return found


def diff_excerpt(diff: str, max_lines: int = DIFF_LINES) -> tuple[str, int, int]:
    """The diff's first whole hunks within `max_lines` (at least one): the text, hunks shown, hunks in all."""
    every = hunks(diff)
    shown: list[str] = []
    count = 0
    for hunk in every:
        if shown and len(shown) + len(hunk) > max_lines:
            break
        shown.extend(hunk)
        count += 1
    return "".join(shown), count, len(every)


def reason_kind(reason: str) -> str:
    """A reason with its particulars (names, paths, numbers) blanked, so the same decline counts once."""
    kind = re.sub(r"`[^`]*`", "`…`", reason)
    kind = re.sub(r"(?:/[\w.-]+){2,}", "…", kind)
    return re.sub(r"\b\d+\b", "N", kind)


def declined_lines(findings: list[dict[str, Any]], top: int = TOP_REASONS) -> list[str]:
    """The most frequent kinds of declined fix, each with its count and rules."""
    kinds: Counter[str] = Counter()
    codes: dict[str, set[str]] = {}
    for finding in findings:
        if not finding["fixed"] and finding.get("not_fixed_reason"):
            kind = reason_kind(finding["not_fixed_reason"])
            kinds[kind] += 1
            codes.setdefault(kind, set()).add(finding["code"])
    lines = []
    for kind, count in kinds.most_common(top):
        text = f"{count:4}  {','.join(sorted(codes[kind]))}  {kind}"
        lines.append(text if len(text) <= REASON_WIDTH else text[: REASON_WIDTH - 1] + "…")
    if len(kinds) > top:
        lines.append(f"      ... and {len(kinds) - top} more kind(s) of reason")
    return lines


def _phase_printer() -> Progress:
    """One line per phase of the run (scan, fix, check) with its file count: a slow machine shows it is working."""
    seen: set[str] = set()

    def progress(phase: str, done: int, total: int) -> None:
        if phase not in seen:
            seen.add(phase)
            print(f"  {phase}: {total} file(s)", file=sys.stderr, flush=True)

    return progress


def main(argv: list[str] | None = None) -> int:
    demo = Path((argv or sys.argv[1:] or ["demo"])[0])
    tree = demo / "src" / "diffusers"
    print(f"--- rewriting {tree} (safe and unsafe fixes, one run) ---", flush=True)
    # As `codemod run` reads it: where files outside any package look up diffusers classes (none by default).
    context = Path(os.environ["CODEMOD_CONTEXT"]) if os.environ.get("CODEMOD_CONTEXT") else None
    options = RunOptions(
        paths=(tree,), mode=Mode.WRITE, unsafe_fixes=True, cache_dir=cache_directory([tree]), context=context
    )
    result = run_engine(options, _phase_printer())
    findings = [finding.to_dict() for finding in result.findings]
    diff = unified_diff(result)
    (demo / "fixes.diff").write_text(diff)
    (demo / "remaining.txt").write_text("\n".join([*text_lines(result), summary_line(result), *summary_notes(result)]) + "\n")

    for error in result.errors:
        print(f"demo: error: {display_path(error.path)}{f':{error.line}' if error.line else ''}: {error.message}")
    print("\n".join([summary_line(result), *summary_notes(result)]))
    print(f"\n--- findings by rule ---\n{summary_table(findings)}", end="")
    excerpt, shown, hunks = diff_excerpt(diff)
    print(f"\n--- the diff: its first {shown} of {hunks} hunk(s), all of it in {demo / 'fixes.diff'} ---")
    print(excerpt, end="")
    print(f"\n--- why fixes were declined, most frequent first; each finding left, with why: {demo / 'remaining.txt'} ---")
    print("\n".join(declined_lines(findings)))
    return 2 if result.errors else 0


if __name__ == "__main__":
    sys.exit(main())
