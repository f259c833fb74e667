"""The run summary: every group found, what became of it and why (text for logs, JSON for machines)."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class Outcome(str, enum.Enum):
    OPENED = "opened"
    UPDATED = "updated"  # the fix changed: its PR's branch rebuilt on the base, with a comment saying how
    REBUILT = "rebuilt"  # the same fix, its PR's branch rebuilt on a base that moved
    UNCHANGED = "unchanged"  # its open PR already holds this fix, on the current base
    CLOSED = "closed"  # a PR whose fix is no longer needed (landed on the base, or its findings are gone)
    SKIPPED = "skipped"  # etiquette: closed, merged, proposed elsewhere, a human's branch
    WAITING = "waiting"  # the open-PR cap is reached; a later run takes it
    IGNORED = "ignored"  # a maintainer ticked "ignore" on the dashboard
    NOT_VERIFIED = "not-verified"  # the verifier's verdict was not `verified`
    FAILED = "failed"  # this group hit an error (push rejected, a GitHub error on its request)
    NOT_ATTEMPTED = "not-attempted"  # the run stopped before reaching it
    WOULD_OPEN = "would-open"  # dry run
    WOULD_UPDATE = "would-update"  # dry run
    WOULD_REBUILD = "would-rebuild"  # dry run
    WOULD_CLOSE = "would-close"  # dry run


@dataclass
class GroupOutcome:
    group_id: str
    rule: str
    families: list[str]
    branch: str
    fingerprint: str
    files: list[str]
    outcome: Outcome
    reason: str = ""
    pull_number: int | None = None
    pull_url: str | None = None
    verdict: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "outcome": self.outcome.value}


@dataclass
class PullOutcome:
    """An open bot PR that no group of this run holds: closed as no longer needed, or why it was not."""

    number: int
    url: str
    branch: str
    outcome: Outcome  # CLOSED, WOULD_CLOSE, SKIPPED (a human's branch), FAILED
    reason: str
    commit: str | None = None  # the base's commit that made it unneeded

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "outcome": self.outcome.value}


@dataclass
class DashboardResult:
    """What a run did with the dashboard issue."""

    action: str  # created, edited, unchanged, closed, would-create, would-edit, off, not-updated, failed
    number: int | None = None
    url: str | None = None
    chars: int = 0
    reason: str = ""
    body_file: str | None = None  # where the body was saved (dry runs, --bodies-dir)
    body: str = ""

    @property
    def failed(self) -> bool:
        return self.action == "failed"

    def to_json(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if key != "body"}

    def text(self) -> str:
        where = f" #{self.number}" if self.number else ""
        size = f" ({self.chars:,} characters)" if self.chars else ""
        reason = f": {self.reason}" if self.reason else ""
        saved = f"; body in {self.body_file}" if self.body_file else ""
        return f"dashboard: {self.action}{where}{size}{reason}{saved}"


@dataclass
class RunSummary:
    repo: str
    base: str | None = None
    base_sha: str | None = None
    dry_run: bool = False
    groups: list[GroupOutcome] = field(default_factory=list)
    pulls: list[PullOutcome] = field(default_factory=list)  # open PRs without a group in this run
    engine_errors: list[str] = field(default_factory=list)
    stopped: str | None = None  # why the run ended early
    bodies_dir: str | None = None  # where the PR bodies were written
    dashboard: DashboardResult | None = None  # None: --no-dashboard

    def counts(self) -> dict[str, int]:
        counts = {outcome.value: 0 for outcome in Outcome}
        for group in self.groups:
            counts[group.outcome.value] += 1
        return {name: n for name, n in counts.items() if n or name in ("opened", "updated", "skipped")}

    def verified(self) -> int:
        return sum(g.verdict == "verified" for g in self.groups)

    def exit_code(self) -> int:
        """0: every group was handled (whatever the verdict or etiquette said); 1: stopped early, a group or the
        dashboard failed."""
        outcomes = [g.outcome for g in self.groups] + [p.outcome for p in self.pulls]
        failed = any(outcome in (Outcome.FAILED, Outcome.NOT_ATTEMPTED) for outcome in outcomes)
        return 1 if self.stopped or failed or (self.dashboard is not None and self.dashboard.failed) else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "base": self.base,
            "base_sha": self.base_sha,
            "dry_run": self.dry_run,
            "counts": {"groups": len(self.groups), "verified": self.verified(), **self.counts()},
            "groups": [g.to_json() for g in self.groups],
            "pulls": [p.to_json() for p in self.pulls],
            "engine_errors": self.engine_errors,
            "stopped": self.stopped,
            "bodies_dir": self.bodies_dir,
            "dashboard": self.dashboard.to_json() if self.dashboard else None,
            "exit_code": self.exit_code(),
        }

    def write_json(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n")

    def text(self) -> str:
        at = f" @ {self.base} ({self.base_sha[:10]})" if self.base and self.base_sha else ""
        lines = [f"codemod bot: {self.repo}{at}{' [dry run]' if self.dry_run else ''}"]
        counts = ", ".join(f"{n} {name}" for name, n in self.counts().items())
        lines.append(f"{len(self.groups)} fix group(s), {self.verified()} verified in this run: {counts}")
        width = max((len(entry.outcome.value) for entry in [*self.groups, *self.pulls]), default=0)
        for g in self.groups:
            pull = f" #{g.pull_number}" if g.pull_number else ""
            reason = f": {g.reason}" if g.reason else ""
            lines.append(f"  {g.outcome.value:<{width}}  {g.rule} {g.families[0]}{pull} [{g.branch}]{reason}")
        if self.pulls:
            lines.append(f"{len(self.pulls)} open PR(s) with no fix group left in this run:")
        for p in self.pulls:
            lines.append(f"  {p.outcome.value:<{width}}  #{p.number} [{p.branch}]: {p.reason}")
        lines += [f"engine error: {error}" for error in self.engine_errors]
        if self.bodies_dir:
            lines.append(f"PR bodies: {self.bodies_dir}")
        if self.dashboard:
            lines.append(self.dashboard.text())
        if self.stopped:
            lines.append(f"stopped early: {self.stopped}")
        return "\n".join(lines)
