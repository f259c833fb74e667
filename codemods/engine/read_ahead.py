"""What resolving will read besides the trees' files, read while the workers still scan.

A run resolves its findings in its own process, alone, once every file is scanned; the scan runs in workers,
and this process mostly waits on them. What a rule's `resolve` reads outside the trees (DIF003: the checkout's
`tests/`, two thirds of a cold check's resolution of a diffusers checkout) is therefore read in that wait, as
soon as a scanned file shows a finding that will ask (`Rule.read_ahead`), into the run's `FileMemo`, where
`resolve` then finds it. Only while workers scan: in this process alone it would take the same time, or be
read for a finding that `resolve` drops first.
"""

from __future__ import annotations

from codemods.engine.scan import FileScan
from codemods.project.files import FileMemo
from codemods.rules.base import Rule


class ReadAhead:
    def __init__(self, rules: list[Rule], memo: FileMemo) -> None:
        self._waiting = {rule.code: rule for rule in rules}  # the rules that have not read ahead yet
        self._memo = memo

    def scanned(self, scan: FileScan) -> None:
        """Read what the findings of `scan` will ask of, for each rule that has not yet."""
        for code, found in scan.rules:
            rule = self._waiting.get(code)
            if rule is None:
                continue
            try:
                read = any(rule.read_ahead(finding, self._memo) for finding in found.findings)
            except Exception:  # resolving reads the same again, and reports the crash as one of the file's errors
                read = True
            if read:
                del self._waiting[code]
