"""The dashboard's part in a run: read the ticks first, write the body last."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import github
import requests

from bot.github.api import GitHubUnavailable, error_message, unavailable_reason
from bot.github.dashboard.issue import DashboardIssue, DashboardState
from bot.github.dashboard.render import DashboardContent, render
from bot.github.pulls import KnownPull
from bot.plan import Plan
from bot.summary import DashboardResult, RunSummary
from bot.verification import Verification


@dataclass(frozen=True)
class CensusSource:
    """Where the top-ten table and the page link come from (a `codemod verify --json` report, its HTML page)."""

    report: Path | None = None
    page_url: str | None = None

    def targets(self, verifications: list[Verification]) -> list[dict[str, Any]]:
        """The census report's targets; without one, those measured for this run's fix groups."""
        if self.report is not None:
            return list(json.loads(self.report.read_text()).get("targets", []))
        return [target for v in verifications for target in v.report.get("targets", [])]


def update_dashboard(
    issue: DashboardIssue,
    state: DashboardState,
    plan: Plan,
    summary: RunSummary,
    pulls: list[KnownPull],
    census: list[dict[str, Any]],
    census_url: str | None,
    run_url: str | None,
    body_file: Path | None,
) -> DashboardResult:
    if summary.stopped:
        return DashboardResult("not-updated", state.number, reason="the run stopped early; the next run updates it")
    try:
        state = issue.refresh(state)
        content = DashboardContent(
            repo=plan.repo,
            html_url=issue.repo.html_url,
            base=plan.base,
            base_sha=plan.base_sha,
            groups=plan.groups,
            outcomes=summary.groups,
            pull_outcomes=summary.pulls,
            pulls=pulls,
            report_only=plan.report_only,
            ticks=state.ticks,
            updated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            census=census,
            census_url=census_url,
            run_url=run_url,
        )
        return issue.write(state, render(content), body_file)
    # GitHub trouble fails the dashboard (exit 1), not the PRs this run already opened.
    except GitHubUnavailable as error:
        return DashboardResult("failed", state.number, reason=str(error))
    except (github.GithubException, requests.RequestException) as error:
        return DashboardResult("failed", state.number, reason=unavailable_reason(error) or error_message(error))
