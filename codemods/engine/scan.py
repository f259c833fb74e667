"""Detection for one file: decode, parse, extract facts, run each asked-for rule. Runs in worker processes.

What a worker returns (`FileScan`) is what the cache keeps: a function of the file's path, bytes and
tree alone, with each rule's findings kept apart, so that a run with another rule selection reuses
every rule it shares with earlier runs and computes only the others. Nothing here depends on the
run's mode, on fixing, or on other files (cross-file resolution happens after, on copies).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from codemods.engine.cache import content_digest, file_state, pickle_entry
from codemods.findings import FileError, Finding
from codemods.project.facts import FileFacts, extract_facts
from codemods.project.files import SourceDecodeError, decode_source
from codemods.project.index import TreeInfo
from codemods.rules import select_rules
from codemods.rules.base import Rule
from codemods.source import SourceFile


@dataclass(frozen=True)
class RuleScan:
    """One rule's findings in one file, before cross-file resolution."""

    findings: tuple[Finding, ...] = ()
    error: FileError | None = None  # the rule crashed on this file


# Every rule's result where it found nothing, as one object: a worker's results then pickle it once, not once a rule a file.
_NOTHING_FOUND = RuleScan()


@dataclass(frozen=True)
class FileScan:
    """One file's facts (every rule's: they are rule-independent) and the findings of the rules run on it."""

    path: str
    facts: FileFacts | None
    error: FileError | None = None  # unreadable or unparsable: no rule ran
    facts_errors: tuple[tuple[str, FileError], ...] = ()  # (rule code, its `collect_facts` crash)
    rules: tuple[tuple[str, RuleScan], ...] = ()  # (rule code, its findings), by code
    cacheable: bool = True  # False: the file could not be read (a state of the disk, not of its bytes)

    def missing(self, codes: Iterable[str]) -> tuple[str, ...]:
        """The rules among `codes` this scan has no result for (none, where the file does not parse)."""
        if self.error is not None:
            return ()
        known = dict(self.rules)
        return tuple(code for code in codes if code not in known)

    def merged(self, other: FileScan) -> FileScan:
        """This scan with `other`'s rule results added (a new value: cached scans are never changed)."""
        return replace(other, rules=tuple(sorted({**dict(self.rules), **dict(other.rules)}.items())))

    def select(self, codes: tuple[str, ...]) -> Scan:
        """What the run sees for its selected rules: their findings in code order, and the first error."""
        if self.error is not None:
            return Scan(self.path, (), self.facts, self.error)
        known, facts_errors = dict(self.rules), dict(self.facts_errors)
        findings = tuple(finding for code in sorted(codes) for finding in known[code].findings)
        errors = [facts_errors.get(code) or known[code].error for code in sorted(codes)]
        return Scan(self.path, findings, self.facts, next((e for e in errors if e is not None), None))


@dataclass(frozen=True)
class Scan:
    path: str
    findings: tuple[Finding, ...]
    facts: FileFacts | None
    error: FileError | None = None


@dataclass(frozen=True)
class ScanJob:
    path: str
    module: str
    tree: TreeInfo
    rule_codes: tuple[str, ...]
    text: str | None = None  # a rewritten text to scan instead of the file on disk
    digested: bool = False  # its key is made of the bytes it reads (`run_kept_scan_job`): no one looked it up first

    def size(self) -> int:
        """How much it scans (0 for a file that cannot be read: its scan says so)."""
        if self.text is not None:
            return len(self.text)
        try:
            return os.path.getsize(self.path)
        except OSError:
            return 0


def run_scan_job(job: ScanJob) -> FileScan:
    if job.text is not None:
        return scan_text(job.path, job.module, job.text, job.tree, _rules(job.rule_codes))
    try:
        data = Path(job.path).read_bytes()
    except OSError as error:
        return unreadable(job.path, error)
    return _scan_bytes(job, data)


def run_kept_scan_job(job: ScanJob) -> tuple[bytes, tuple[int, int, str] | None]:
    """`run_scan_job` for a run that keeps its scans: the scan pickled as the cache keeps it (`pickle_entry`: the
    worker's time, not the run's own process's as it saves), and where `job.digested`, the reading the scan was of
    (size, mtime_ns from before reading, `content_digest` of the bytes; None where unreadable): its key."""
    if job.text is not None or not job.digested:
        return pickle_entry(run_scan_job(job)), None
    try:
        state = file_state(job.path)
        data = Path(job.path).read_bytes()
    except OSError as error:
        return pickle_entry(unreadable(job.path, error)), None
    return pickle_entry(_scan_bytes(job, data)), (*state, content_digest(data))


def _scan_bytes(job: ScanJob, data: bytes) -> FileScan:
    try:
        text = decode_source(data)[0]
    except SourceDecodeError as error:
        return FileScan(job.path, None, FileError(job.path, str(error)))
    return scan_text(job.path, job.module, text, job.tree, _rules(job.rule_codes))


def unreadable(path: str, error: OSError) -> FileScan:
    return FileScan(path, None, FileError(path, f"cannot read: {error.strerror}"), cacheable=False)


@cache
def _rules(codes: tuple[str, ...]) -> list[Rule]:
    return select_rules(codes) if codes else []


@cache
def _facts_rules() -> list[Rule]:
    return [rule for rule in select_rules(None) if rule.facts_trigger is not None]


def scan_text(path: str, module: str, text: str, tree: TreeInfo, rules: list[Rule]) -> FileScan:
    source = SourceFile(path, text, module)
    try:
        return _scan_source(source, tree, rules)
    finally:
        source.release()


def _scan_source(source: SourceFile, tree: TreeInfo, rules: list[Rule]) -> FileScan:
    # Here, not at the top: the engine imports this module, and a warm check must import no analysis.
    from codemods.analysis.models.frequency import with_site_cost

    path, text = source.path, source.text
    facts = file_facts(source)
    if facts.facts is None:
        return facts
    results: list[tuple[str, RuleScan]] = []
    for rule in rules:
        if not rule.may_match(text):
            results.append((rule.code, _NOTHING_FOUND))
            continue
        try:
            found = list(rule.check(source, tree))
        except Exception as crash:  # a rule bug must not take the run (or the file) down with it
            results.append((rule.code, RuleScan((), _rule_failed(path, rule, crash))))
            continue
        kept = tuple(with_site_cost(source, f) for f in found if not source.suppressed(f.code, f.line, f.end_line))
        results.append((rule.code, RuleScan(kept) if kept else _NOTHING_FOUND))
    return replace(facts, rules=tuple(sorted(results)))


def file_facts(source: SourceFile) -> FileScan:
    """The facts other files' findings may need: the tree's own, and those every rule gathers (no findings)."""
    try:
        parsed = source.tree
    except SyntaxError as error:
        return FileScan(source.path, None, FileError(source.path, f"syntax error: {error.msg}", error.lineno))
    except ValueError as error:  # e.g. null bytes
        return FileScan(source.path, None, FileError(source.path, f"cannot parse: {error}"))
    facts = extract_facts(source.path, source.module, source.text, parsed, source.line_index)
    errors = []
    for rule in _facts_rules():
        if rule.facts_trigger.search(source.text):
            try:
                facts.by_rule[rule.code] = rule.collect_facts(source)
            except Exception as crash:  # same contract as a crash in check
                errors.append((rule.code, _rule_failed(source.path, rule, crash)))
    return FileScan(source.path, facts, None, tuple(errors))


def _rule_failed(path: str, rule: Rule, crash: Exception) -> FileError:
    return FileError(path, f"rule {rule.code} failed: {type(crash).__name__}: {crash}")
