"""One file's planned fixes applied in a worker process: the job, its result, and its cache key.

A job carries the text and the fixes (by rule code), so a worker needs nothing else; its result is
the fixed text or why there is none (an edit that did not apply, a crash, code that does not
compile). Results are cached by `apply_key` (codemods/engine/fixing.py, codemods/output/sarif_fixes.py use them).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from codemods.engine.cache import digest
from codemods.findings import Fix
from codemods.rules import select_rules


@dataclass(frozen=True)
class ApplyJob:
    path: str
    text: str
    fixes: tuple[tuple[str, Fix], ...]  # (rule code, fix)


@dataclass(frozen=True)
class Applied:
    path: str
    text: str | None
    error: str | None = None


def run_apply_job(job: ApplyJob) -> Applied:
    from codemods.engine.apply import EditNotApplied, apply_fixes

    rules = _rules(tuple(sorted({code for code, _ in job.fixes})))
    try:
        text = apply_fixes(job.text, [(rules[code], fix) for code, fix in job.fixes])
    except EditNotApplied as error:
        return Applied(job.path, None, f"fix not applied: {error}")
    except Exception as crash:  # a rule's edit that crashes leaves the file as it was
        return Applied(job.path, None, f"fix failed: {type(crash).__name__}: {crash}")
    try:
        compile(text, job.path, "exec", dont_inherit=True)
    except SyntaxError as error:  # its str() names the file by its absolute path: the line is enough here
        return Applied(job.path, None, f"fix produced code that does not compile: {error.msg} (line {error.lineno})")
    except ValueError as error:
        return Applied(job.path, None, f"fix produced code that does not compile: {error}")
    return Applied(job.path, text)


def apply_key(job: ApplyJob) -> str:
    return "apply:" + digest(job.path, job.text.encode("utf-8") + repr(job.fixes).encode("utf-8"))


@cache
def _rules(codes: tuple[str, ...]) -> dict[str, object]:
    return {rule.code: rule for rule in select_rules(codes)}
