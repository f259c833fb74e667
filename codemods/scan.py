"""Detection for one file: decode, parse, extract facts, run each triggered rule. Runs in worker processes."""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from functools import cache

from codemods.facts import FileFacts, extract_facts
from codemods.files import SourceDecodeError, read_source
from codemods.findings import FileError, Finding
from codemods.project import TreeInfo
from codemods.rules import select_rules
from codemods.rules.base import Rule
from codemods.source import SourceFile


@dataclass
class Scan:
    path: str
    findings: list[Finding]
    facts: FileFacts | None
    error: FileError | None = None


def unresolved(scan: Scan) -> Scan:
    """`scan` with copies of its findings: a rule's `resolve` sets the message and fix on the finding it is
    given, and a scan (cached, or reused by the next fix pass) is resolved more than once."""
    return dataclasses.replace(scan, findings=[copy.copy(finding) for finding in scan.findings])


@dataclass(frozen=True)
class ScanJob:
    path: str
    module: str
    tree: TreeInfo
    rule_codes: tuple[str, ...]
    text: str | None = None  # a rewritten text to scan instead of the file on disk


def run_scan_job(job: ScanJob) -> Scan:
    if job.text is not None:
        return scan_text(job.path, job.module, job.text, job.tree, _rules(job.rule_codes))
    try:
        text = read_source(job.path).text
    except OSError as error:
        return Scan(job.path, [], None, FileError(job.path, f"cannot read: {error.strerror}"))
    except SourceDecodeError as error:
        return Scan(job.path, [], None, FileError(job.path, str(error)))
    return scan_text(job.path, job.module, text, job.tree, _rules(job.rule_codes))


@cache
def _rules(codes: tuple[str, ...]) -> list[Rule]:
    return select_rules(codes) if codes else []


def scan_text(path: str, module: str, text: str, tree: TreeInfo, rules: list[Rule]) -> Scan:
    source = SourceFile(path, text, module)
    try:
        return _scan_source(source, tree, rules)
    finally:
        source.release()


def _scan_source(source: SourceFile, tree: TreeInfo, rules: list[Rule]) -> Scan:
    path, text = source.path, source.text
    facts, error = file_facts(source, rules)
    if facts is None:
        return Scan(path, [], None, error)
    findings: list[Finding] = []
    for rule in rules:
        if not rule.may_match(text):
            continue
        try:
            found = list(rule.check(source, tree))
        except Exception as crash:  # a rule bug must not take the run (or the file) down with it
            error = _rule_failed(path, rule, crash)
            continue
        findings.extend(f for f in found if not source.suppressed(f.code, f.line, f.end_line))
    return Scan(path, findings, facts, error)


def file_facts(source: SourceFile, rules: list[Rule]) -> tuple[FileFacts | None, FileError | None]:
    """The facts other files' findings may need: the tree's own, and those the selected rules gather."""
    try:
        parsed = source.tree
    except SyntaxError as error:
        return None, FileError(source.path, f"syntax error: {error.msg}", error.lineno)
    except ValueError as error:  # e.g. null bytes
        return None, FileError(source.path, f"cannot parse: {error}")
    facts = extract_facts(source.path, source.module, source.text, parsed)
    error = None
    for rule in rules:
        if rule.facts_trigger is not None and rule.facts_trigger.search(source.text):
            try:
                facts.by_rule[rule.code] = rule.collect_facts(source)
            except Exception as crash:  # same contract as a crash in check
                error = _rule_failed(source.path, rule, crash)
    return facts, error


def _rule_failed(path: str, rule: Rule, crash: Exception) -> FileError:
    return FileError(path, f"rule {rule.code} failed: {type(crash).__name__}: {crash}")
