"""The one data path behind the CLI, the pre-commit hook and the bot.

discover files -> scan each (parallel, cached: parse, facts, rule checks) -> resolve findings
against the whole tree -> plan fixes -> apply with libcst (parallel) -> re-scan the result
(parses, compiles, its own findings ask for nothing more, `# Copied from` copies still agree) ->
again over the tree as fixed, until a pass changes nothing (codemods/engine/fix_loop.py) ->
write all or nothing (codemods/engine/tree_write.py) / diff / report. A file that fails any step is left
byte-for-byte as it was. An interrupt (Ctrl-C) ends the run within a fraction of a second, as
`RunInterrupted`, whose message says what was written: nothing, unless the commit had begun, which
is then finished.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path

from codemods.engine.cache import ScanCache, content_digest
from codemods.engine.collector import collector_paused
from codemods.engine.copy_declines import copy_decline
from codemods.engine.interrupts import InterruptWatch
from codemods.engine.read_ahead import ReadAhead
from codemods.engine.run_inputs import RunInputs
from codemods.engine.run_result import Mode, RunOptions, RunResult, ScanStats
from codemods.engine.scan import FileScan, Scan, ScanJob, file_facts, run_kept_scan_job, run_scan_job
from codemods.engine.scan_keys import ScanKeys
from codemods.engine.tree_write import PlannedWrite, TreeWrite, interrupted_line
from codemods.engine.worker_pool import in_workers
from codemods.errors import RunInterrupted, UsageError
from codemods.findings import FileError, Finding, FixSafety
from codemods.project.config import Config
from codemods.project.facts import FileFacts
from codemods.project.files import SourceText
from codemods.project.frozen import is_deprecated_pipeline
from codemods.project.index import ProjectIndex, TreeInfo, module_name, tree_relative
from codemods.project.layout import package_roots
from codemods.rules import check_opt_ins, select_rules
from codemods.rules.base import Rule
from codemods.source import SourceFile

Progress = Callable[[str, int, int], None]


def run(options: RunOptions, progress: Progress | None = None, inputs: RunInputs | None = None) -> RunResult:
    """`inputs`: what the caller already read of the run (`RunInputs.of(options)`, to look for a known result first)."""
    inputs = inputs if inputs is not None else RunInputs.of(options)
    # Before any rule is imported: a check over unchanged inputs is only a lookup.
    if (known := inputs.known_result()) is not None:
        return known
    config = inputs.config
    select = options.select if options.select is not None else config.select
    ignore = options.ignore if options.ignore is not None else config.ignore
    rules = select_rules(select, ignore)
    if not rules:  # `--select ''`, or `--select X --ignore X`: a run that checks nothing must not pass
        raise UsageError(
            f"the rule selection is empty (select: {(','.join(select) or 'none') if select is not None else 'all'}; "
            f"ignore: {','.join(ignore) or 'none'}): name at least one rule that `codemod rules` lists"
        )
    config = replace(config, opt_in=(*config.opt_in, *options.opt_in))
    check_opt_ins(config.opt_in)
    with InterruptWatch() as interrupts, collector_paused():
        current = _Run(options, config, rules, inputs, progress or (lambda *_: None), interrupts)
        try:
            result = current.execute()
        except KeyboardInterrupt:
            raise RunInterrupted(current.interrupted_line()) from None
        del current  # freed before the collector is back, whose first collection would walk every scan again
    inputs.keep(result)
    return result


class _Run:
    def __init__(
        self,
        options: RunOptions,
        config: Config,
        rules: list[Rule],
        inputs: RunInputs,
        progress: Progress,
        interrupts: InterruptWatch,
    ):
        self.options = options
        self.interrupts = interrupts
        self.rules = rules
        self.rule_by_code = {rule.code: rule for rule in rules}
        self.progress = progress
        self.files = [str(f) for f in inputs.files]
        self.in_run = frozenset(self.files)
        root_of_directory = package_roots({file.parent for file in inputs.files})  # each directory looked at once
        self.roots: dict[str, Path | None] = {str(file): root_of_directory[file.parent] for file in inputs.files}
        self.modules = {path: module_name(Path(path), root) for path, root in self.roots.items()}
        self.trees = {root: TreeInfo.of(root, config.line_length, config.opt_in) for root in set(self.roots.values())}
        self.codes = tuple(rule.code for rule in rules)
        self.keys = ScanKeys(self.trees)
        # Not the rule selection: a file's scan holds each rule's findings apart (see codemods.engine.scan).
        self.cache = ScanCache(options.cache_dir, self.keys.cache_name, inputs.digests)
        self.stats = ScanStats()
        self.used_cache_keys: set[str] = set()
        self.jobs = options.jobs or os.cpu_count() or 1
        self.pyproject = config.pyproject
        self.frozen: set[str] = set()  # files never changed: findings there are only counted
        if not (config.include_deprecated if options.include_deprecated is None else options.include_deprecated):
            self.frozen = {path for path, module in self.modules.items() if is_deprecated_pipeline(module)}
        self.originals: dict[str, SourceText] = {}  # files a fix touches, as read before fixing
        self.phase = "start"  # where an interrupt found the run
        self.tree_write: TreeWrite | None = None

    @property
    def writes(self) -> bool:
        return self.options.mode is Mode.WRITE

    def execute(self) -> RunResult:
        # Here, not at the top: a warm check returns before executing and must import no analysis.
        from codemods.analysis.models.frequency import grouped_patterns

        result = RunResult(self.options.mode, self.rules, len(self.files), scan_stats=self.stats)
        scans = self.scan_files({path: (key, None) for path, key in self.digest_files().items()}, "scan")
        loose = [Path(path) for path, root in self.roots.items() if root is None]
        index = ProjectIndex(
            {root for root in self.roots.values() if root} | set(loose),
            {s.path: s.facts for s in scans.values() if s.facts},
            self.load_facts,
            # Only a script outside any package resolves names against a diffusers, and only one the user named:
            # the pre-commit hook's environment has none installed, and one answer for one file beats a guess.
            reference=self.options.context if loose else None,
            file_memo=self.cache.file_memo,
        )
        errors = {path: s.error for path, s in scans.items() if s.error}
        findings = self.resolve(scans.values(), index, errors)
        result.findings, result.skipped = self.split_frozen(findings)
        result.loose_files, result.context = len(loose), self.options.context
        if self.options.mode is not Mode.CHECK:
            from codemods.engine.fix_loop import fix_until_stable

            settled = fix_until_stable(self, scans, index, errors, result.findings)
            result.changes, result.findings, result.formatter = settled.changes, settled.findings, settled.formatter
            result.passes = settled.passes
            if settled.skipped is not None:
                result.skipped = settled.skipped
            if self.options.mode is Mode.WRITE and not self.write(result.changes, errors):
                result.changes = {}
                result.findings = [
                    replace(f, fixed=False, not_fixed_reason=errors[f.path].message) if f.fixed else f
                    for f in result.findings
                ]
        self.cache.save(self.used_cache_keys)
        result.errors = sorted(errors.values(), key=lambda e: e.path)
        result.findings = grouped_patterns(sorted(result.findings, key=Finding.sort_key))
        return result

    def split_frozen(self, findings: list[Finding]) -> tuple[list[Finding], list[Finding]]:
        """The findings the run may fix, and those in files it may not change (counted in the summary, never fixed)."""
        return [f for f in findings if f.path not in self.frozen], [f for f in findings if f.path in self.frozen]

    def digest_files(self) -> dict[str, str | None]:
        """Each file's scan key: none where the cache is the run's alone (it starts empty and ends with the run, so a
        key would find nothing and keep nothing anyone asks for), nor yet where it is empty and workers scan (they
        digest what they read: `reading_key`), nor where the file cannot be read (its scan, which cannot read it either, says so)."""
        if not self.cache.outlives_run or (self.cache.empty and self.parallel(self.files)):
            return dict.fromkeys(self.files)
        keys: dict[str, str | None] = {}
        for path in self.files:
            try:
                keys[path] = self.keys.key(path, self.cache.digests.of(path))
            except OSError:
                keys[path] = None
        return keys

    def scan_files(self, files: dict[str, tuple[str | None, str | None]], phase: str) -> dict[str, Scan]:
        """Each file's scan under the selected rules, `files` being path -> (scan key or None, text or None to
        read it). Rule results the cache holds are reused; a worker runs only the rules missing for a file."""
        known: dict[str, FileScan] = {}
        partly: dict[str, FileScan] = {}  # cached with some of the selected rules' results missing
        pending: list[ScanJob] = []
        keeps = self.cache.outlives_run
        for path, (key, text) in files.items():
            cached = self.keys.reused(self.cache.get(key), path) if key is not None else None
            missing = cached.missing(self.codes) if cached is not None else self.codes
            if cached is not None:
                self.stats.rule_results_reused += len(self.codes) - len(missing)
                if not missing:  # `missing` is empty for a cached error too
                    known[path] = cached
                    continue
                partly[path] = cached
            root = self.roots[path]
            pending.append(ScanJob(path, self.modules[path], self.trees[root], missing, text, keeps and key is None))
        # Largest first, in small chunks: the workers then finish together (no one left with the big files).
        pending.sort(key=lambda job: -job.size())
        self.progress(phase, len(known), len(files))
        by_workers = self.parallel(pending)
        ahead = ReadAhead(self.rules, self.cache.file_memo) if phase == "scan" and by_workers else None
        # Workers hand over the scans they pickled as the cache keeps them; this process pickles only its own.
        kept_by_workers = keeps and by_workers
        scan_job = run_kept_scan_job if kept_by_workers else run_scan_job
        for done in self.map(scan_job, pending, phase, already=len(known), total=len(files)):
            pickled, reading = done if kept_by_workers else (None, None)
            scan = pickle.loads(pickled) if kept_by_workers else done
            key = files[scan.path][0] or self.reading_key(scan.path, reading)
            if ahead is not None:
                ahead.scanned(scan)
            if scan.path in partly:  # what is kept is the merged scan, not the worker's
                known[scan.path], pickled = partly[scan.path].merged(scan), None
            else:
                known[scan.path] = scan
            if scan.cacheable and key is not None:
                self.cache.put(key, known[scan.path], pickled)
            self.stats.files_parsed += 1
            self.stats.rule_results_computed += len(scan.rules)
        self.used_cache_keys.update(key for key, _ in files.values() if key is not None)
        return {path: known[path].select(self.codes) for path in files}

    def reading_key(self, path: str, reading: tuple[int, int, str] | None) -> str | None:
        """The key of a scan of `reading`, a worker's reading of the file (none where it could not read it)."""
        if reading is None:
            return None
        key = self.keys.key(path, self.cache.digests.seen(path, reading))
        self.used_cache_keys.add(key)
        return key

    def scan_texts(self, texts: dict[str, str]) -> dict[str, Scan]:
        """Scans of rewritten texts, keyed (and cached) as the scans of the files once written (UTF-8)."""
        keyed = {path: (self.keys.key(path, content_digest(text.encode("utf-8"))), text) for path, text in texts.items()}
        return self.scan_files(keyed, "check")

    def load_facts(self, path: str, module: str, text: str) -> FileFacts | None:
        """Facts of a tree file this run did not scan (the index asks only when a finding needs them)."""
        key = self.keys.key(path, content_digest(text.encode("utf-8")))
        self.used_cache_keys.add(key)
        cached = self.keys.reused(self.cache.get(key), path)
        if cached is None:
            cached = file_facts(SourceFile(path, text, module))  # facts alone: no rule has run on it
            self.cache.put(key, cached)
        return cached.facts

    def map(self, function: Callable, jobs: list, phase: str, already: int = 0, total: int = 0) -> Iterator:
        total = total or len(jobs)
        self.phase = phase
        values = in_workers(function, jobs, self.jobs, phase) if self.parallel(jobs) else map(function, jobs)
        for done, value in enumerate(values, start=1):
            yield value
            self.interrupts.check()
            self.progress(phase, already + done, total)

    def parallel(self, jobs: list) -> bool:
        return len(jobs) >= 8 and self.jobs > 1

    def resolve(self, scans: Iterable[Scan], index: ProjectIndex, errors: dict[str, FileError]) -> list[Finding]:
        """The scans' findings confirmed against the whole tree: new values (`Rule.resolve` never changes its argument)."""
        # Here, not at the top: a warm check returns before resolving and must import no rule module.
        from codemods.analysis.models.frequency import ModelReach
        from codemods.rules.missing_repeated_blocks import MissingRepeatedBlocks

        resolved = []
        reach = ModelReach.of(index, MissingRepeatedBlocks.code)
        for scan in scans:
            for finding in scan.findings:
                rule = self.rule_by_code[finding.code]
                try:
                    kept = rule.resolve(finding, index)
                except Exception as crash:  # same contract as a crash in check
                    errors[scan.path] = FileError(scan.path, f"rule {rule.code} failed: {type(crash).__name__}: {crash}")
                    continue
                if kept is not None:
                    resolved.append(self.decline_unchangeable_copies(reach.apply(kept), index))
        return resolved

    def decline_unchangeable_copies(self, finding: Finding, index: ProjectIndex) -> Finding:
        """The finding without its fix when its `# Copied from` group can never change in this run, said here
        (not only in the fixer) so that a check reports what a write does (codemods/engine/copy_declines.py)."""
        if finding.fix is None or finding.path in self.frozen:  # a frozen file's findings are only counted
            return finding
        reason = copy_decline(index, finding, self.in_run, self.frozen)
        return finding if reason is None else replace(finding, fix=None, not_fixed_reason=reason)

    def wanted(self, finding: Finding) -> bool:
        """Whether this run applies the finding's fix (safe ones always, unsafe ones on request)."""
        if finding.fix is None:
            return False
        return finding.fix.safety is FixSafety.SAFE or self.options.unsafe_fixes

    def write(self, changes: dict[str, tuple[str, str]], errors: dict[str, FileError]) -> bool:
        """Every changed file written, or none (then each has its error): whether they were."""
        self.interrupts.check()
        self.phase = "stage"
        self.tree_write = TreeWrite(
            [PlannedWrite(path, after, self.originals[path]) for path, (_, after) in changes.items()], self.display
        )
        refused = self.tree_write.run()
        for path, reason in refused.items():
            errors[path] = FileError(path, reason)
        return not refused

    def display(self, path: str) -> str:
        return tree_relative(path, self.roots.get(path))

    def interrupted_line(self) -> str:
        return interrupted_line(self.tree_write, self.phase)
