"""Applying fixes and proving the result before anything is written.

A planned set of fixes is applied per file (libcst, in worker processes); the new texts are
scanned again, and a file's fixes stand only if: the new text parses and compiles; every
`# Copied from` pair the fixes touch still agrees (source and copies change together or not
at all); and the fixed file, checked again, asks for no more fixes than were declined in it (a
fix that fires again on its own output is not idempotent). Fixes that fail are declined with a
reason (the finding stays reported), and the rest is re-applied from the pass's starting text.
Fixes that another file's fix unblocks are the next pass's (codemods/engine/fix_loop.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from codemods.edits.formatter import FormatterGate, findings_in
from codemods.engine.apply_jobs import Applied, ApplyJob, apply_key, run_apply_job
from codemods.engine.copy_declines import fix_copy_relations, pair_members, unchangeable_reason, unfound_reason
from codemods.engine.scan import Scan
from codemods.findings import FileError, Finding
from codemods.project.copies import CopyPair, copy_is_consistent
from codemods.project.facts import FileFacts
from codemods.project.files import SourceDecodeError, WriteRefused, read_source, why_not_writable
from codemods.project.index import ProjectIndex

if TYPE_CHECKING:
    from codemods.engine.run_state import EngineRun

# Each round re-applies from the original texts with fewer fixes; a handful always settles it.
_MAX_ROUNDS = 6


class Fixer:
    """One pass of fixes over the tree as `texts` (files an earlier pass changed) and the disk have it."""

    def __init__(
        self,
        run: EngineRun,
        index: ProjectIndex,
        errors: dict[str, FileError],
        texts: dict[str, str],
        gate: FormatterGate | None,
    ) -> None:
        self.run = run
        self.index = index
        self.errors = errors
        self.texts = texts
        self.declined: dict[int, str] = {}
        self._applied: dict[ApplyJob, Applied] = {}
        self.rescans: dict[str, Scan] = {}  # the changed files' scans, as the pass left them
        self.gate = gate

    def fix(self, findings: list[Finding]) -> tuple[dict[str, tuple[str, str]], list[Finding]]:
        """The changed texts (path -> (before, after)), and `findings` as new values saying which were fixed."""
        candidates = [f for f in findings if self.run.wanted(f) and f.path not in self.errors]
        self._refuse_unchangeable(candidates)
        self._decline_conflicts(candidates)
        changes: dict[str, tuple[str, str]] = {}
        for _ in range(_MAX_ROUNDS):
            active = [f for f in candidates if id(f) not in self.declined and f.path not in self.errors]
            changes, rescans, styled = self._apply(active)
            if (
                styled
                and self._check_copies(active, changes, rescans)
                and self._check_second_pass(candidates, changes, rescans)
            ):
                self.rescans = rescans  # exactly the changed files' scans (`_apply` drops a failed one)
                break
        else:
            changes = {}
            for finding in candidates:
                self.declined.setdefault(id(finding), "fixes did not settle; nothing written")
        outcome = {
            id(f): replace(f, not_fixed_reason=self.declined[id(f)])
            if id(f) in self.declined
            else replace(f, fixed=f.path in changes)
            for f in candidates
        }
        return changes, [outcome.get(id(f), f) for f in findings]

    def _refuse_unchangeable(self, candidates: list[Finding]) -> None:
        """Files that cannot be read again or written fail before any fix is planned, so that their
        `# Copied from` partners are not changed either."""
        by_path: dict[str, list[Finding]] = {}
        for finding in candidates:
            by_path.setdefault(finding.path, []).append(finding)
        for path, group in by_path.items():
            try:
                self._original(path)
            except OSError as error:
                self._fail(path, f"cannot read: {error.strerror}", group)
                continue
            except SourceDecodeError as error:
                self._fail(path, str(error), group)
                continue
            reason = why_not_writable(path) if self.run.writes else None
            if reason:
                self._fail(path, reason, group)

    def _decline_conflicts(self, candidates: list[Finding]) -> None:
        """Two fixes replacing the same node cannot both apply; the first (by position) wins."""
        owner: dict[tuple[str, object], tuple[Finding, object]] = {}
        for finding in sorted(candidates, key=Finding.sort_key):
            for edit in finding.fix.edits:
                if edit.inserts:
                    continue
                key = (finding.path, edit.target)
                if key in owner and owner[key][0] is not finding:
                    first, first_edit = owner[key]
                    if first.code == finding.code and first_edit == edit:
                        continue  # one fix shared by several findings (a class rewritten as a whole)
                    self.declined[id(finding)] = f"same code as the {first.code} fix at line {first.line}; run again"
                    break
                owner[key] = (finding, edit)

    def _apply(self, active: list[Finding]) -> tuple[dict[str, tuple[str, str]], dict[str, Scan], bool]:
        """The fixed texts and their re-scans; False when the formatter gate refused a hunk (another round)."""
        by_path: dict[str, list[Finding]] = {}
        for finding in active:
            by_path.setdefault(finding.path, []).append(finding)
        jobs = [
            ApplyJob(path, self._original(path), tuple((f.code, f.fix) for f in sorted(group, key=Finding.sort_key)))
            for path, group in sorted(by_path.items())
        ]
        # Each round re-applies from the original texts; a file whose set of fixes did not change since
        # an earlier round (or an earlier run: the cache) is not parsed with libcst again.
        applied_texts = self._computed(jobs, self._applied, apply_key, run_apply_job, "fix")
        changes = {}
        for applied in applied_texts:
            error = applied.error or self._unencodable(applied)
            if error:
                self._fail(applied.path, error, by_path[applied.path])
            elif applied.text != self._original(applied.path):
                changes[applied.path] = (self._original(applied.path), applied.text)
        styled = self._style(changes, by_path)
        # Keyed as the scan of the written file will be: the next run over the fixed tree reads it back.
        rescans = self.run.scan_texts({path: after for path, (_, after) in changes.items()})
        for path, scan in rescans.items():
            if scan.error:
                self._fail(path, f"the fixed file failed its re-check: {scan.error.message}", by_path[path])
                del changes[path]
        return changes, rescans, styled

    def _computed(self, jobs: list, memo: dict, key_of: Callable[[Any], str], function: Callable, phase: str) -> list:
        """`function` over `jobs`, each computed once: this run's `memo`, then the cache of earlier runs."""
        for job in jobs:
            if job not in memo and (known := self.run.cache.get(key_of(job))) is not None:
                memo[job] = known
        pending = [job for job in jobs if job not in memo]
        for job, value in zip(pending, self.run.map(function, pending, phase)):
            memo[job] = value
            self.run.cache.put(key_of(job), value)
        self.run.used_cache_keys.update(map(key_of, jobs))
        return [memo[job] for job in jobs]

    def _style(self, changes: dict[str, tuple[str, str]], by_path: dict[str, list[Finding]]) -> bool:
        """Our hunks re-laid as the target's formatter would (in place); the fixes in hunks it would
        re-wrap beyond them declined. True if none was."""
        if self.gate is None or not changes:
            return True
        refused = self.gate.relay(changes)
        for path, hunks in refused.items():
            for hunk in hunks:
                for finding in findings_in(hunk, by_path[path]):
                    self.declined[id(finding)] = hunk.reason
        return not refused

    def _original(self, path: str) -> str:
        """The text this pass fixes: an earlier pass's result, else the file as read (kept for the write)."""
        if path not in self.run.originals:
            self.run.originals[path] = read_source(path)
        return self.texts.get(path, self.run.originals[path].text)

    def _unencodable(self, applied: Applied) -> str | None:
        try:
            self.run.originals[applied.path].encode(applied.text)
        except WriteRefused as refused:
            return str(refused)
        return None

    def _fail(self, path: str, message: str, findings: list[Finding]) -> None:
        self.errors[path] = FileError(path, message)
        for finding in findings:
            self.declined[id(finding)] = message

    def _check_copies(
        self, active: list[Finding], changes: dict[str, tuple[str, str]], rescans: dict[str, Scan]
    ) -> bool:
        """Decline fixes that would make a `# Copied from` copy differ from its source; True if none did."""

        def text_after(path: str) -> str:
            return changes[path][1] if path in changes else self.index.text(path) or ""

        def facts_after(path: str) -> FileFacts | None:
            return rescans[path].facts if path in rescans else self.index.facts(path)

        def text_before(path: str) -> str:
            return self.index.text(path) or ""

        settled = True
        verdicts: dict[CopyPair, str | None] = {}
        for finding in active:
            if finding.path not in changes:
                continue
            pairs, unfound = fix_copy_relations(self.index, finding)
            if unfound:
                self.declined[id(finding)] = unfound_reason(self.index, unfound)
                settled = False
                continue
            for pair in sorted(pairs):  # sorted: the reason must not depend on hash order
                if pair not in verdicts:
                    verdicts[pair] = self._copy_problem(pair, text_before, text_after, facts_after)
                if verdicts[pair]:
                    self.declined[id(finding)] = verdicts[pair]
                    settled = False
                    break
        return settled

    def _copy_problem(self, pair: CopyPair, before, after, facts_after) -> str | None:
        # The static part is the resolve phase's too (codemods/engine/copy_declines.py): asked again here as a backstop.
        if reason := unchangeable_reason(self.index, pair, self.run.in_run, self.run.frozen):
            return reason
        members = pair_members(self.index, pair)
        if not copy_is_consistent(pair, before, self.index.facts):
            return f"{members}, but they already differ, so agreement after the fix cannot be shown"
        if not copy_is_consistent(pair, after, facts_after):
            return f"{members}; the fix does not apply to both alike, so it is applied to neither"
        return None

    def _check_second_pass(
        self, candidates: list[Finding], changes: dict[str, tuple[str, str]], rescans: dict[str, Scan]
    ) -> bool:
        """A fix must not fire again on its own output: in each fixed file, a rule whose fixes applied there
        finds no more to fix than was declined on purpose. (Another rule's finding that a fix unblocks is the
        next pass's: codemods/engine/fix_loop.py.)

        Declined in any round, not only this one: a fix declined in round 1 (its copy group cannot
        change together) is still in the file, and a second run finds it again by design.
        """
        index = self.index.overlay(
            {p: after for p, (_, after) in changes.items()}, {p: s.facts for p, s in rescans.items()}
        )
        applied = {(f.path, f.code) for f in candidates if id(f) not in self.declined}
        declined = Counter((f.path, f.code) for f in candidates if id(f) in self.declined)
        settled = True
        # One resolve for all the files: each resolve first places the tree's model classes (`ModelReach`), the
        # same for every file of one tree.
        again_by_path: dict[str, list[Finding]] = {path: [] for path in rescans}
        for finding in self.run.resolve(rescans.values(), index, {}):
            if self.run.wanted(finding) and (finding.path, finding.code) in applied:
                again_by_path[finding.path].append(finding)
        for path, again in again_by_path.items():
            counts = Counter(f.code for f in again)
            leftover = next((f for f in again if counts[f.code] > declined[(path, f.code)]), None)
            if leftover is not None:
                self._fail(
                    path,
                    f"rule {leftover.code} would change the fixed file again (line {leftover.line}): not idempotent",
                    [f for f in candidates if f.path == path and id(f) not in self.declined],
                )
                settled = False
        return settled
