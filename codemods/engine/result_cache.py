"""A whole `--check` result, kept by the digests of everything it was computed from.

A warm run over an unchanged tree then does no analysis at all: it stats the files (their digests
come from the cache's (size, mtime_ns) index, `FileDigests`), finds the result, and never imports a rule.
The key is conservative: anything the engine reads to produce the result is in it, and a key
that differs only in a way that cannot matter is merely a miss:
- the tool's own source (`tool_digest`), the run's options and the loaded configuration (which
  the `pyproject.toml` it came from decides; its bytes are in the key too) and the working
  directory (reports show paths relative to it);
- the digest of every file of the trees the run's files belong to, scanned or not (a finding in
  one file is resolved against the others), of the installed diffusers when a file outside any
  package resolves names against it, and of the checkout's `tests/` (DIF003's gated tests).

Only a check is kept: a diff or a write carries the fixed texts and runs the formatter gate.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from codemods.engine.cache import FileDigests, ResultStore, content_digest, file_state, tool_digest
from codemods.engine.run_result import Mode, RunOptions, RunResult, ScanStats
from codemods.findings import Finding
from codemods.project.config import Config
from codemods.project.layout import package_roots, tests_dir_of

if TYPE_CHECKING:
    from codemods.rules.base import Rule

# Results of other checks kept beside this one's (other selections, other trees, the hook's files).
_MAX_RESULTS = 16


class ResultCache:
    """The result of one check, if an earlier run computed it from the same inputs."""

    def __init__(self, directory: Path, options: RunOptions, config: Config, files: list[Path], digests: FileDigests):
        self._digests = digests
        self._store = ResultStore(directory, keep=_MAX_RESULTS)
        self._head = self._key_head(options, config)  # read now: what the run uses
        self._inputs = sorted(self._inputs_of(files, options.context))
        # A first run finds nothing here, so its key waits for the digests its workers make of the files they scan
        # (codemods/engine/entry.py), and holds only where each digest's reading found the file as it is now.
        self._first_run_states = {path: file_state(path) for path in self._inputs} if self._store.empty else None
        self.key = self._key() if self._first_run_states is None else None

    @classmethod
    def of(cls, options: RunOptions, config: Config, files: list[Path], digests: FileDigests) -> ResultCache | None:
        """The cache for a check that uses one; None for any other run (and when an input cannot be read)."""
        if options.mode is not Mode.CHECK or options.cache_dir is None:
            return None
        try:
            return cls(options.cache_dir, options, config, files, digests)
        except OSError:
            return None  # the run reports what it cannot read

    def get(self) -> RunResult | None:
        found = self._store.get(self.key) if self.key is not None else None
        if found is None:
            return None
        result, codes = found
        return replace(result, rules=SelectedRules(codes), scan_stats=ScanStats(result_reused=True))

    def put(self, result: RunResult) -> None:
        key = self.key or self._first_run_key()
        if key is None:
            return
        # The rules by code: they are the tool's code, which the key holds, and loading them costs an import each.
        # The findings without what only the rules' `resolve` reads of them (`Finding.extra`): no report does, and
        # loading its values (the rules' own types) would import the rules' and analyses' modules.
        kept = replace(
            result, rules=[], findings=_without_extra(result.findings), skipped=_without_extra(result.skipped)
        )
        self._store.put(key, (kept, tuple(rule.code for rule in result.rules)))

    def _first_run_key(self) -> str | None:
        """A first run's key; None where an input changed (or went) after the run began: its result may be of either."""
        try:
            key = self._key()
        except OSError:
            return None
        states = self._first_run_states or {}
        return key if all(self._digests.state(path) == state for path, state in states.items()) else None

    @staticmethod
    def _key_head(options: RunOptions, config: Config) -> bytes:
        """All of the key but the files' digests."""
        head = f"{tool_digest()}|{replace(options, jobs=0, cache_dir=None)!r}|{config!r}|{Path.cwd()}".encode()
        return head + config.pyproject.read_bytes() if config.pyproject is not None else head

    def _key(self) -> str:
        files = "".join(f"\0{path}\0{self._digests.of(path)}" for path in self._inputs)
        return content_digest(self._head + files.encode())

    @staticmethod
    def _inputs_of(files: list[Path], context: Path | None) -> set[str]:
        """Every file the run may read: its own, the rest of their trees, what the trees are checked against,
        and the `--context` package that files outside any package look classes up in."""
        inputs = {str(file) for file in files}
        roots = set(package_roots(map(Path, {os.path.dirname(file) for file in inputs})).values())
        trees: set[Path] = {root for root in roots if root is not None}
        if None in roots and context is not None:
            trees.add(context)
        trees |= {tests for root in trees if (tests := tests_dir_of(root)) is not None}
        for tree in trees:
            inputs |= set(_python_files(tree))
        return inputs


class SelectedRules(Sequence["Rule"]):
    """A cached result's rules, imported only when a report reads them (the GitHub format names each finding's)."""

    def __init__(self, codes: tuple[str, ...]) -> None:
        self._codes = codes

    @cached_property
    def _rules(self) -> list[Rule]:
        from codemods.rules import rule_class

        return [rule_class(code)() for code in self._codes]

    def __getitem__(self, index: int) -> Rule:  # type: ignore[override]
        return self._rules[index]

    def __len__(self) -> int:
        return len(self._codes)


def _without_extra(findings: list[Finding]) -> list[Finding]:
    return [replace(finding, extra={}) if finding.extra else finding for finding in findings]


def _python_files(tree: Path) -> Iterable[str]:
    for directory, _, names in os.walk(tree):
        yield from (os.path.join(directory, name) for name in names if name.endswith(".py"))
