"""The checkboxes of the dashboard issue: how they are written, and what a maintainer ticked.

GitHub is the bot's only state, so the body is the record: each checkbox carries a hidden key
(`<!-- codemod-open-now: dif004-pipelines-flux -->`), and the bot reads the ticks at the start
of each run. Ticking a task-list box in GitHub's web editor rewrites only its `[ ]`, so the key
survives any edit that keeps the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DASHBOARD_MARKER = "<!-- codemod-dashboard -->"
OPEN_NOW = "open-now"  # on a group waiting for the cap: the next run opens it even above the cap
IGNORE = "ignore"  # on a group or a report-only family: left out of PRs, listed under "Ignored"

_CHECKBOX = re.compile(
    r"^[ \t]*[-*+][ \t]+\[(?P<mark>[ xX])\][^\n]*?"
    r"<!--[ \t]*codemod-(?P<kind>open-now|ignore):[ \t]*(?P<key>\S+)[ \t]*-->",
    re.MULTILINE,
)


def findings_key(rule: str, family: str) -> str:
    """The ignore key of the report-only findings of one rule in one family (group keys are group ids)."""
    return f"findings:{rule}:{family}"


@dataclass(frozen=True)
class Ticks:
    open_now: frozenset[str] = frozenset()  # group ids
    ignored: frozenset[str] = frozenset()  # group ids and `findings_key`s

    @classmethod
    def read(cls, body: str | None) -> Ticks:
        ticked: dict[str, set[str]] = {OPEN_NOW: set(), IGNORE: set()}
        for match in _CHECKBOX.finditer(body or ""):
            if match["mark"] in "xX":
                ticked[match["kind"]].add(match["key"])
        return cls(frozenset(ticked[OPEN_NOW]), frozenset(ticked[IGNORE]))


def checkbox(label: str, kind: str, key: str, ticked: bool, indent: str = "") -> str:
    return f"{indent}- [{'x' if ticked else ' '}] {label} <!-- codemod-{kind}: {key} -->"
