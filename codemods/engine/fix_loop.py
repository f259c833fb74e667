"""Fixes applied until the tree is stable, as Ruff's fix loop applies them.

A fix in one file can unblock a finding in another: on diffusers 0.16.1, once DIF004 has rewritten
InstructPix2Pix's UNet call, DIF002 no longer finds that pipeline's use of the sigmas in its way and
fixes the LMS scheduler, which took a second run before. So after a pass that changed files,
the run analyses the tree as that pass left it (in memory: the changed files' scans are the fixer's
own re-scans, every other file's scan is reused, only the cross-file resolution runs again) and
fixes what is fixable now, until a pass changes nothing, or `MAX_PASSES` passes have run. The
findings reported are those fixed in any pass and those the final tree still has, at its lines:
what a check of the written tree finds.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from codemods.edits.formatter import FormatterGate, find_pin
from codemods.engine.fixing import Fixer
from codemods.engine.scan import Scan
from codemods.findings import FileError, Finding
from codemods.project.index import ProjectIndex

if TYPE_CHECKING:
    from codemods.edits.formatter import GateReport
    from codemods.engine.run_state import EngineRun

# Each pass fixes what the previous one unblocked; real trees settle in two or three.
MAX_PASSES = 5


@dataclass
class Settled:
    changes: dict[str, tuple[str, str]]  # path -> (text as read, text after every pass)
    findings: list[Finding]  # fixed in some pass, or left in the final tree
    skipped: list[Finding] | None  # in files the run may not change, as the final tree has them (None: no pass changed)
    formatter: GateReport | None
    passes: int  # passes that changed something


def fix_until_stable(
    run: EngineRun, scans: dict[str, Scan], index: ProjectIndex, errors: dict[str, FileError], findings: list[Finding]
) -> Settled:
    gate = _formatter_gate(run)
    texts: dict[str, str] = {}  # each changed file's text after the latest pass that changed it
    fixed: list[Finding] = []
    skipped: list[Finding] | None = None
    passes = 0
    while True:
        fixer = Fixer(run, index, errors, texts, gate)
        changes, findings = fixer.fix(findings)
        if not changes:
            break
        passes += 1
        fixed += [f for f in findings if f.fixed]
        texts.update((path, after) for path, (_, after) in changes.items())
        scans = {**scans, **fixer.rescans}
        index = index.overlay(texts, {path: scan.facts for path, scan in fixer.rescans.items()})
        findings, skipped = run.split_frozen(run.resolve(scans.values(), index, errors))
        if passes == MAX_PASSES:
            why = f"still fixable after {MAX_PASSES} passes of fixes; run again"
            findings = [
                replace(f, not_fixed_reason=why) if run.wanted(f) and f.path not in errors else f for f in findings
            ]
            break
    originals = {path: run.originals[path].text for path in texts}
    return Settled(
        changes={path: (originals[path], text) for path, text in sorted(texts.items()) if text != originals[path]},
        findings=fixed + findings,
        skipped=skipped,
        formatter=gate.final_report() if gate else None,
        passes=passes,
    )


def _formatter_gate(run: EngineRun) -> FormatterGate | None:
    """The target's pinned formatter, which every pass's hunks must pass (none: the target pins none)."""
    pin = find_pin(run.pyproject)
    return FormatterGate(pin) if pin else None
