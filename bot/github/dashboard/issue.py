"""The dashboard issue on GitHub: found, read, created once, edited in place, and left alone once closed.

It is found by listing the issues the bot's login created (exact, unlike search, whose index
lags) and keeping the one whose body holds the hidden marker; its title and label are only for
people. A maintainer who closes it has asked the bot to stop: it is never reopened, never
recreated and no longer edited (the run summary says so). A create that may have been done
(a 5xx, a lost answer) is looked up before any second attempt, so there is never a second one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from github.Repository import Repository

from bot.github.api import create_once
from bot.github.dashboard.ticks import DASHBOARD_MARKER, Ticks
from bot.github.pulls import ensure_repo_label
from bot.summary import DashboardResult

TITLE = "codemod dashboard"


@dataclass(frozen=True)
class DashboardState:
    """The dashboard as GitHub holds it now (`handle` None: there is none yet)."""

    handle: Any = None  # the PyGithub Issue
    ticks: Ticks = Ticks()
    off: str | None = None  # why the repository cannot have one (issues turned off, as on a fresh fork)

    @property
    def number(self) -> int | None:
        return self.handle.number if self.handle is not None else None

    @property
    def closed(self) -> bool:
        return self.handle is not None and self.handle.state == "closed"


class DashboardIssue:
    def __init__(self, repo: Repository, login: str, label: str, dry_run: bool) -> None:
        self.repo = repo
        self.login = login
        self.label = label
        self.dry_run = dry_run

    def read(self) -> DashboardState:
        if not self.repo.has_issues:
            return DashboardState(off="issues are turned off in this repository (Settings > Features > Issues)")
        handle = self._find()
        return DashboardState(handle, Ticks.read(handle.body if handle is not None else None))

    def refresh(self, state: DashboardState) -> DashboardState:
        """The latest body just before an edit, so a box ticked during the run is not overwritten."""
        if state.handle is None or state.off:
            return state
        handle = self.repo.get_issue(state.handle.number)
        return DashboardState(handle, Ticks.read(handle.body))

    def write(self, state: DashboardState, body: str, body_file: Path | None = None) -> DashboardResult:
        chars = len(body)
        if body_file is not None:
            body_file.parent.mkdir(parents=True, exist_ok=True)
            body_file.write_text(body)
        saved = str(body_file) if body_file is not None else None
        if state.off:
            return DashboardResult("off", None, None, chars, state.off, saved, body)
        if state.closed:
            reason = "closed by a maintainer, so the bot no longer updates it (reopen it to resume)"
            return DashboardResult("closed", state.number, state.handle.html_url, chars, reason, saved, body)
        if self.dry_run:
            action = "would-edit" if state.handle is not None else "would-create"
            url = state.handle.html_url if state.handle is not None else None
            return DashboardResult(action, state.number, url, chars, "dry run", saved, body)
        if state.handle is not None:
            if state.handle.body == body:
                return DashboardResult("unchanged", state.number, state.handle.html_url, chars, "", saved, body)
            state.handle.edit(body=body)  # PATCH: idempotent, retried on 5xx by BotRetry
            return DashboardResult("edited", state.number, state.handle.html_url, chars, "", saved, body)
        ensure_repo_label(self.repo, self.label)
        handle, reconciled = create_once(
            lambda: self.repo.create_issue(title=TITLE, body=body, labels=[self.label]), self._find
        )
        if reconciled and handle.body != body:
            handle.edit(body=body)
        return DashboardResult("created", handle.number, handle.html_url, chars, "", saved, body)

    def _find(self) -> Any:
        """The bot's oldest issue (never a pull request) whose body holds the marker, or None."""
        found = [
            issue
            for issue in self.repo.get_issues(state="all", creator=self.login)
            if issue.pull_request is None and DASHBOARD_MARKER in (issue.body or "")
        ]
        return min(found, key=lambda issue: issue.number, default=None)
