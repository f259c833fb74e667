"""What resolving will read outside the trees is read while the workers scan (codemods/engine/read_ahead.py)."""

from __future__ import annotations

from codemods.engine.read_ahead import ReadAhead
from codemods.engine.scan import FileScan, RuleScan
from codemods.findings import Finding
from codemods.project.files import uncached


class _Reading:
    """A rule that reads ahead for the findings whose message says `reads`, and raises for those saying `crashes`
    (not a `Rule` subclass: every subclass with a code is a rule of the tool, `codemods.rules.all_rules`)."""

    code = "DIF900"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def read_ahead(self, finding, memo) -> bool:
        self.asked.append(finding.message)
        if finding.message == "crashes":
            raise ValueError("unreadable test module")
        return finding.message == "reads"


def _scan(*messages: str) -> FileScan:
    findings = tuple(Finding(_Reading.code, "model.py", 1, 0, 1, 1, message) for message in messages)
    return FileScan("model.py", None, rules=((_Reading.code, RuleScan(findings)),))


def test_a_rule_is_asked_of_each_finding_until_it_reads_then_no_more() -> None:
    rule = _Reading()
    ahead = ReadAhead([rule], uncached)
    for scan in (_scan("asks nothing"), _scan("skips", "reads", "after the read"), _scan("reads")):
        ahead.scanned(scan)
    assert rule.asked == ["asks nothing", "skips", "reads"]


def test_a_crash_while_reading_ahead_is_left_to_resolving_and_ends_the_asking() -> None:
    # Resolving reads the same again and reports a crash as it reports any (the file's error), not the run's.
    rule = _Reading()
    ahead = ReadAhead([rule], uncached)
    for scan in (_scan("crashes"), _scan("reads")):
        ahead.scanned(scan)
    assert rule.asked == ["crashes"]
