"""Tests that already fail on the original tree, grouped by cause, the runner's apart from the code's.

Fifteen tests that each fail because the Hub cannot be reached are one line in a PR body
("15 tests need the Hugging Face Hub, which this runner cannot reach"), not fifteen: a maintainer
reads what the runner lacked once, named as the runner's, and the failures that may be the code's
by their message. No torch here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# (what the message says, what the tests need that the runner lacks), first match wins.
RUNNER_CAUSES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"huggingface\.co|HF_HUB_OFFLINE|offline mode|LocalEntryNotFound|OfflineModeIsEnabled", re.I),
        "the Hugging Face Hub, which this runner cannot reach",
    ),
    (re.compile(r"No module named '([\w.]+)'"), "`{0}`, which this runner's environment does not have"),
    (
        re.compile(r"not compiled with CUDA|no NVIDIA driver|CUDA driver|requires a CUDA|cuda is not available", re.I),
        "a CUDA device, which this runner does not have",
    ),
)


@dataclass
class FailureGroup:
    cause: str  # what they need (the runner's) or the message they fail with (the code's)
    runner: bool  # the runner lacks something: not the code's failure
    tests: list[str] = field(default_factory=list)

    def line(self) -> str:
        count = f"{len(self.tests)} test{'s' if len(self.tests) > 1 else ''}"
        if self.runner:
            return f"{count} need{'' if len(self.tests) > 1 else 's'} {self.cause}"
        return f"{count} fail{'' if len(self.tests) > 1 else 's'} on the original tree with: {self.cause}"


def runner_cause(message: str) -> str | None:
    """What a failure's `message` says the runner lacks, or None when it says nothing of the runner."""
    for pattern, needs in RUNNER_CAUSES:
        found = pattern.search(message)
        if found:
            return needs.format(*found.groups())
    return None


def grouped_failures(failures: list[dict[str, str]]) -> list[FailureGroup]:
    """`failures` (test, message) by cause: the runner's first, then the code's by message; largest first."""
    groups: dict[tuple[bool, str], FailureGroup] = {}
    for failure in failures:
        needs = runner_cause(failure["message"])
        cause = needs or failure["message"].split("\n")[0] or "no message"
        groups.setdefault((needs is not None, cause), FailureGroup(cause, needs is not None)).tests.append(
            failure["test"]
        )
    return sorted(groups.values(), key=lambda group: (not group.runner, -len(group.tests), group.cause))
