"""The dashboard issue end to end: real PyGithub against the double, as a maintainer meets it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from bot_harness import (  # noqa: F401  (fixtures)
    REPO,
    FakeVerifier,
    dashboard_options_fixture,
    options_fixture,
    remote_fixture,
    with_options,
)
from diffusers_tree import PACKAGE
from github_double import Fault, GitHubDouble, push_branch

from bot.runner import BotOptions, census, plan, run
from bot.summary import Outcome
from bot.verify.reporting.report import TargetResult, VerifyReport

ISSUES = r"/repos/huggingface/diffusers/issues"
KANDINSKY_ID = "dif004-pipelines-kandinsky"
BOUNDARY = f"{PACKAGE}/pipelines/boundary/pipeline_boundary.py"
# Our own snippet: a Python comparison of the device timestep in the denoising loop (DIF007, no fix).
BOUNDARY_PIPELINE = """\
class BoundaryPipeline:
    def __call__(self, num_inference_steps: int, boundary: float):
        device = self._execution_device
        self.scheduler.set_timesteps(num_inference_steps, device=device)
        timesteps = self.scheduler.timesteps
        model = self.transformer
        for i, t in enumerate(timesteps):
            if t >= boundary:
                model = self.transformer_2
        return model
"""


def tick(key: str, kind: str):
    """What GitHub's web editor does when a maintainer ticks the box with this hidden key."""

    def edit(body: str) -> str:
        ticked, count = re.subn(
            rf"^(\s*- )\[ \](.*<!-- codemod-{kind}: {re.escape(key)} -->)$", r"\1[x]\2", body, flags=re.M
        )
        assert count == 1, f"no unticked {kind} box for {key}"
        return ticked

    return edit


def outcome_of(summary, group_id: str) -> Outcome:
    return next(g.outcome for g in summary.groups if g.group_id == group_id)


def test_first_run_creates_one_dashboard_issue(remote: GitHubDouble, dashboard_options: BotOptions) -> None:
    summary = run(dashboard_options, FakeVerifier())

    [issue] = remote.issues()
    assert (issue.title, issue.author.login, issue.state) == ("codemod dashboard", "codemod-bot", "open")
    assert [label.name for label in issue.labels] == ["performance"]
    assert issue.body.startswith("<!-- codemod-dashboard -->\n")
    assert "## Open PRs (4)" in issue.body
    assert (summary.dashboard.action, summary.dashboard.number) == ("created", issue.number)
    assert summary.text().endswith(f"dashboard: created #{issue.number} ({len(issue.body):,} characters)")


def test_dashboard_links_each_open_pr_to_its_lines_at_the_base_commit(
    remote: GitHubDouble, dashboard_options: BotOptions
) -> None:
    summary = run(dashboard_options, FakeVerifier())

    body = remote.issue(summary.dashboard.number).body
    kandinsky = next(p for p in remote.pull_requests() if p.head_ref == "codemod/dif004/pipelines-kandinsky")
    blob = f"{remote.api_url}/{REPO}/blob/{summary.base_sha}"
    line = next(line for line in body.splitlines() if line.startswith(f"- #{kandinsky.number} "))
    assert line == (
        f"- #{kandinsky.number} [DIF004] output-attribute-access in pipelines/kandinsky: "
        f"[`pipeline_kandinsky.py#L14`]({blob}/{PACKAGE}/pipelines/kandinsky/pipeline_kandinsky.py#L14)"
    )


def test_report_only_findings_are_listed_by_rule_and_shape_with_the_rules_why_and_ignored_by_family(
    remote: GitHubDouble, dashboard_options: BotOptions
) -> None:
    push_branch(
        remote.bare_repo, "main", {BOUNDARY: BOUNDARY_PIPELINE, f"{PACKAGE}/pipelines/boundary/__init__.py": ""}
    )

    summary = run(with_options(dashboard_options, select=("DIF004", "DIF007")), FakeVerifier())

    body = remote.issue(summary.dashboard.number).body
    blob = f"{remote.api_url}/{REPO}/blob/{summary.base_sha}"
    assert "## Report-only findings (1)" in body
    assert "### DIF007 host-sync-in-hot-path: 1 in 1 shape(s)" in body
    assert "- DIF007 (every denoising step): `t >= boundary` compares" in body
    assert f"[`pipeline_boundary.py#L8`]({blob}/{BOUNDARY}#L8)" in body
    assert "The host cannot run ahead of the GPU past a sync: the queue drains" in body
    # The rule's module at the commit that ran: this checkout's HEAD.
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True)
    assert f"[Documentation](https://github.com/diffusers-codemod/diffusers-codemod/blob/{head.stdout.strip()}/codemods/rules/" in body
    assert (
        "- [ ] ignore `pipelines/boundary` (1) <!-- codemod-ignore: findings:DIF007:pipelines/boundary -->"
    ) in body


def test_second_run_edits_the_dashboard_and_creates_nothing(
    remote: GitHubDouble, dashboard_options: BotOptions
) -> None:
    first = run(dashboard_options, FakeVerifier())
    remote.close_pull_request(1)

    second = run(dashboard_options, FakeVerifier())

    assert len(remote.issues()) == 1
    assert len(remote.requests("POST", ISSUES)) == 1
    assert len(remote.requests("PATCH", rf"{ISSUES}/{first.dashboard.number}")) == 1
    assert (second.dashboard.action, second.dashboard.number) == ("edited", first.dashboard.number)
    body = remote.issue(first.dashboard.number).body
    assert "## Closed by a maintainer (1)\n\n- #1 [DIF004] output-attribute-access in models/autoencoders/" in body
    assert "## Open PRs (3)" in body


def test_ticking_open_this_pr_now_opens_it_above_the_cap(remote: GitHubDouble, dashboard_options: BotOptions) -> None:
    capped = with_options(dashboard_options, max_open_prs=1)
    first = run(capped, FakeVerifier())
    assert outcome_of(first, KANDINSKY_ID) is Outcome.WAITING
    remote.edit_issue_body(first.dashboard.number, tick(KANDINSKY_ID, "open-now"))

    second = run(capped, FakeVerifier())

    assert outcome_of(second, KANDINSKY_ID) is Outcome.OPENED
    assert [g.outcome.value for g in second.groups] == ["unchanged", "opened", "waiting", "waiting"]
    assert len(remote.pull_requests("open")) == 2
    body = remote.issue(first.dashboard.number).body
    assert f"codemod-open-now: {KANDINSKY_ID}" not in body  # opened: the box has done its job


def test_ticking_ignore_keeps_the_group_out_of_prs(remote: GitHubDouble, dashboard_options: BotOptions) -> None:
    first = run(with_options(dashboard_options, max_open_prs=0), FakeVerifier())
    remote.edit_issue_body(first.dashboard.number, tick(KANDINSKY_ID, "ignore"))

    second = run(dashboard_options, FakeVerifier())

    assert outcome_of(second, KANDINSKY_ID) is Outcome.IGNORED
    assert "codemod/dif004/pipelines-kandinsky" not in [p.head_ref for p in remote.pull_requests()]
    body = remote.issue(first.dashboard.number).body
    ignored = body[body.index("## Ignored (1)") :]
    assert f"- [x] **DIF004** `pipelines/kandinsky` (fix group) <!-- codemod-ignore: {KANDINSKY_ID} -->" in ignored


def test_a_closed_dashboard_is_neither_updated_nor_replaced(
    remote: GitHubDouble, dashboard_options: BotOptions
) -> None:
    first = run(dashboard_options, FakeVerifier())
    remote.close_issue(first.dashboard.number, reason="not_planned")
    body = remote.issue(first.dashboard.number).body

    second = run(dashboard_options, FakeVerifier())

    assert [(i.number, i.state, i.body) for i in remote.issues()] == [(first.dashboard.number, "closed", body)]
    assert len(remote.requests("POST", ISSUES)) == 1
    assert remote.requests("PATCH", rf"{ISSUES}/\d+") == []
    assert second.dashboard.action == "closed"
    assert "closed by a maintainer, so the bot no longer updates it (reopen it to resume)" in second.text()
    assert second.exit_code() == 0


@pytest.mark.parametrize("applied", [True, False], ids=["502-after-creating", "502-without-effect"])
def test_a_502_on_create_gives_one_dashboard(
    remote: GitHubDouble, dashboard_options: BotOptions, applied: bool
) -> None:
    remote.inject(Fault.server_error("POST", ISSUES, applied=applied))

    summary = run(dashboard_options, FakeVerifier())

    [issue] = remote.issues()
    assert [r.status for r in remote.requests("POST", ISSUES)] == ([502] if applied else [502, 201])
    assert (summary.dashboard.action, summary.dashboard.number) == ("created", issue.number)
    assert "## Open PRs (4)" in issue.body


def test_dry_run_writes_nothing_and_saves_the_body_with_the_pr_bodies(
    remote: GitHubDouble, dashboard_options: BotOptions, tmp_path: Path
) -> None:
    summary = run(with_options(dashboard_options, dry_run=True, bodies_dir=tmp_path / "bodies"), FakeVerifier())

    assert {r.method for r in remote.requests()} == {"GET"}
    assert remote.issues() == []
    saved = (tmp_path / "bodies" / "dashboard.md").read_text()
    assert saved == summary.dashboard.body
    assert summary.dashboard.action == "would-create"
    assert "- would open (dry run): **DIF004** `pipelines/kandinsky`: [`pipeline_kandinsky.py#L14`](" in saved


def test_a_repository_without_issues_gets_its_prs_and_a_note_why_there_is_no_dashboard(
    remote: GitHubDouble, dashboard_options: BotOptions
) -> None:
    remote.turn_off_issues()  # as on a fresh fork

    summary = run(dashboard_options, FakeVerifier())

    assert [g.outcome.value for g in summary.groups] == ["opened"] * 4
    assert remote.requests(path=rf"{ISSUES}") == []
    assert summary.dashboard.action == "off"
    assert "dashboard: off (" in summary.text() and "issues are turned off in this repository" in summary.text()
    assert summary.exit_code() == 0


def test_no_dashboard_asks_github_nothing_about_issues(remote: GitHubDouble, options: BotOptions) -> None:
    summary = run(options, FakeVerifier())

    assert remote.requests(path=rf"{ISSUES}(/\d+)?") == []
    assert summary.dashboard is None


def test_a_failed_edit_fails_the_run_after_the_prs(remote: GitHubDouble, dashboard_options: BotOptions) -> None:
    first = run(dashboard_options, FakeVerifier())
    remote.close_pull_request(1)  # something new to write
    remote.inject(Fault.server_error("PATCH", rf"{ISSUES}/{first.dashboard.number}", status=503, times=10))

    second = run(dashboard_options, FakeVerifier())

    assert second.dashboard.action == "failed"
    assert second.exit_code() == 1
    assert [g.outcome.value for g in second.groups] == ["skipped", "unchanged", "unchanged", "unchanged"]
    assert f"dashboard: failed #{first.dashboard.number}: GitHub kept failing after retries (" in second.text()


def test_census_job_verifies_the_plans_commit_and_writes_the_report_and_its_page(
    remote: GitHubDouble, options: BotOptions, tmp_path: Path
) -> None:
    plan(options, tmp_path / "plan.json")
    seen: list[Path] = []

    def verifier(src: Path, **settings) -> VerifyReport:
        seen.append(src)
        counts = {"h2d": 1.0, "d2h": 0.0, "sync": 2.0, "outputs": 0.0}
        target = TargetResult("DDIMScheduler", ["DIF002"], [], "verified", kind="scheduler", unit="step")
        target.before, target.after = counts, {**counts, "sync": 0.0}
        return VerifyReport(str(src), settings["device"], None, {}, [], [target])

    census(options, tmp_path / "plan.json", tmp_path / "census.json", tmp_path / "census.html", verifier)

    [src] = seen
    assert (src / "pipelines" / "kandinsky" / "pipeline_kandinsky.py").is_file()
    report = json.loads((tmp_path / "census.json").read_text())
    assert report["targets"][0]["before"]["sync"] == 2.0
    assert 'data-target="DDIMScheduler"' in (tmp_path / "census.html").read_text()


def test_cli_dry_run_prints_the_body_it_would_write(remote: GitHubDouble, tmp_path: Path) -> None:
    env = {**os.environ, "GITHUB_TOKEN": remote.token}
    command = [sys.executable, "-m", "codemod_cli", "bot", "run", "--repo", REPO, "--api-url", remote.api_url]
    command += ["--select", "DIF004", "--dry-run", "--max-open-prs", "0", "--request-interval", "0"]
    command += ["--workdir", str(tmp_path / "work")]

    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    body = (tmp_path / "work" / "bodies" / "dashboard.md").read_text()
    assert done.stdout.startswith(f"--- dashboard body (would-create, {len(body):,} characters) ---\n{body}")
    assert "## Waiting for the cap (4)" in body
    assert remote.issues() == []
