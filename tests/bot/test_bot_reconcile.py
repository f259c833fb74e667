"""Runs after the base moved: open PRs rebuilt on it, or closed once it no longer needs them.

Each test opens the four PRs of the diffusers-like tree, moves `main` as a maintainer would
(a fix applied by hand, an unrelated edit, an edit to a line a fix rewrites), then runs again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from bot_harness import (  # noqa: F401  (fixtures)
    PULLS,
    FakeVerifier,
    dashboard_options_fixture,
    options_fixture,
    remote_fixture,
    remote_refs,
    show,
    with_options,
)
from diffusers_tree import EXPECTED_GROUPS, PACKAGE
from github_double import GitHubDouble, push_branch
from github_double.model import PullRequest
from main_moves import apply_by_hand, edit_main, parent_of, pull_on, shift_down

from bot.github.body import change_comment
from bot.groups import FixGroup, Rewrite
from bot.runner import BotOptions, plan, run
from bot.summary import Outcome, RunSummary

KANDINSKY = f"{PACKAGE}/pipelines/kandinsky/pipeline_kandinsky.py"
KANDINSKY_BRANCH = "codemod/dif004/pipelines-kandinsky"
AUTOENCODER = f"{PACKAGE}/models/autoencoders/autoencoder_kl.py"
AUTOENCODER_BRANCH = "codemod/dif004/models-autoencoders-autoencoder-kl"
ADAPTER = f"{PACKAGE}/pipelines/t2i_adapter/pipeline_stable_diffusion_adapter.py"
ADAPTER_BRANCH = "codemod/dif004/pipelines-t2i-adapter"
PNDM_BRANCH = "codemod/dif004/pipelines-pndm"


def outcomes(summary: RunSummary) -> dict[str, str]:
    return {g.branch: g.outcome.value for g in summary.groups} | {p.branch: p.outcome.value for p in summary.pulls}


def edit_a_fixed_line(remote: GitHubDouble) -> str:
    """A maintainer rewrites by hand one of the two lines the autoencoder's fix rewrites; returns that commit."""
    return edit_main(
        remote,
        AUTOENCODER,
        "decoded_slices = [self._decode(z_slice).sample for z_slice in z.split(1)]",
        "decoded_slices = [self._decode(z_slice, return_dict=False)[0] for z_slice in z.split(1)]",
    )


@dataclass(frozen=True)
class MovedMain:
    first: RunSummary  # the run that opened the four PRs
    pulls: dict[str, PullRequest]  # each branch's PR
    landed: str  # the commit that applies the Kandinsky fix by hand
    shifted: str  # the commit that shifts the adapter pipeline's lines down


@pytest.fixture(name="moved_main")
def moved_main_fixture(remote: GitHubDouble, options: BotOptions) -> MovedMain:
    """The four PRs opened, then `main` moved twice: the Kandinsky fix applied by hand (its PR is no longer
    needed), and an unrelated edit above the adapter pipeline's fix (its PR must be rebuilt)."""
    first = run(options, FakeVerifier())
    pulls = {branch: pull_on(remote, branch) for branch in EXPECTED_GROUPS}
    landed = apply_by_hand(remote, KANDINSKY_BRANCH, KANDINSKY)
    return MovedMain(first, pulls, landed, shift_down(remote, ADAPTER))


def test_a_fix_applied_by_hand_closes_its_pr_naming_the_commit(remote: GitHubDouble, options: BotOptions) -> None:
    run(options, FakeVerifier())
    number = pull_on(remote, KANDINSKY_BRANCH).number
    landed = apply_by_hand(remote, KANDINSKY_BRANCH, KANDINSKY)

    summary = run(options, FakeVerifier())

    assert [(p.number, p.outcome, p.reason, p.commit) for p in summary.pulls] == [
        (
            number,
            Outcome.CLOSED,
            f"no longer needed: its change is on main since {landed[:10]} (Update main); branch deleted",
            landed,
        )
    ]
    pull = remote.pull_request(number)
    assert (pull.state, pull.merged) == ("closed", False)
    assert [c.body for c in pull.comments] == [
        f"No longer needed: its change is on main since {landed[:10]} (Update main). The bot closes this PR and "
        f"deletes its branch `{KANDINSKY_BRANCH}`; it opens a new one if the fix is needed again."
    ]
    assert f"refs/heads/{KANDINSKY_BRANCH}" not in remote_refs(remote.bare_repo)
    assert summary.exit_code() == 0


def test_a_pr_whose_findings_are_gone_is_closed_naming_the_commit(remote: GitHubDouble, options: BotOptions) -> None:
    run(options, FakeVerifier())
    number = pull_on(remote, KANDINSKY_BRANCH).number
    rewritten = edit_main(
        remote,
        KANDINSKY,
        'image = self.movq.decode(latents, force_not_quantize=True)["sample"]',
        "image, _ = self.movq.decode(latents, force_not_quantize=True, return_dict=False)",
    )

    summary = run(options, FakeVerifier())

    assert [(p.outcome, p.reason) for p in summary.pulls] == [
        (
            Outcome.CLOSED,
            f"no longer needed: main has no such findings since {rewritten[:10]} (Update main); branch deleted",
        )
    ]
    assert remote.pull_request(number).state == "closed"


def test_an_unrelated_edit_rebuilds_the_same_pr_on_the_new_main(remote: GitHubDouble, options: BotOptions) -> None:
    first = run(options, FakeVerifier())
    pull = pull_on(remote, KANDINSKY_BRANCH)
    moved = shift_down(remote, KANDINSKY)
    verifier = FakeVerifier()

    summary = run(options, verifier)

    assert outcomes(summary) == {
        branch: "rebuilt" if branch == KANDINSKY_BRANCH else "unchanged" for branch in EXPECTED_GROUPS
    }
    rebuilt = next(g for g in summary.groups if g.branch == KANDINSKY_BRANCH)
    assert rebuilt.reason == f"main changed its files (now {moved[:10]}); rebuilt on it: 1 of 1 target(s) verified"
    assert rebuilt.fingerprint == next(g.fingerprint for g in first.groups if g.branch == KANDINSKY_BRANCH)
    assert verifier.calls == [("pipelines/kandinsky/pipeline_kandinsky.py",)]
    assert len(remote.pull_requests()) == 4
    assert parent_of(remote.bare_repo, KANDINSKY_BRANCH) == moved
    body = remote.pull_request(pull.number).body
    assert f"| `{KANDINSKY}` | 16 |" in body  # the line the fix rewrites, two lines further down
    assert remote.pull_request(pull.number).comments == []


def test_an_edit_to_a_fixed_line_updates_the_pr_and_says_what_changed(
    remote: GitHubDouble, options: BotOptions
) -> None:
    run(options, FakeVerifier())
    number = pull_on(remote, AUTOENCODER_BRANCH).number
    moved = edit_a_fixed_line(remote)

    summary = run(options, FakeVerifier())

    assert outcomes(summary)[AUTOENCODER_BRANCH] == "updated"
    assert [c.body for c in remote.pull_request(number).comments] == [
        f"`main` moved to {moved[:10]} and this fix changed: now 1 rewrite in 1 file (was 2 rewrites in 1 file). "
        "The bot rebuilt the branch on it and verified it again; the description above is updated."
    ]
    assert parent_of(remote.bare_repo, AUTOENCODER_BRANCH) == moved


def test_an_unneeded_pr_on_a_branch_a_human_pushed_to_is_left_open(remote: GitHubDouble, options: BotOptions) -> None:
    run(options, FakeVerifier())
    number = pull_on(remote, KANDINSKY_BRANCH).number
    human = push_branch(remote.bare_repo, KANDINSKY_BRANCH, {"NOTES.md": "maintainer's tweak\n"})
    landed = apply_by_hand(remote, KANDINSKY_BRANCH, KANDINSKY)

    summary = run(options, FakeVerifier())

    assert [(p.outcome, p.reason) for p in summary.pulls] == [
        (
            Outcome.SKIPPED,
            f"no longer needed (its change is on main since {landed[:10]} (Update main)), but branch has commits by "
            "Double Tester <tester@example.com>: left alone, close it by hand",
        )
    ]
    assert remote.pull_request(number).state == "open"
    assert (
        remote.requests("PATCH", PULLS + rf"/{number}")
        == remote.requests("POST", rf".*/issues/{number}/comments")
        == []
    )
    assert remote_refs(remote.bare_repo)[f"refs/heads/{KANDINSKY_BRANCH}"] == human


def test_a_fix_that_comes_back_after_an_autoclose_gets_a_new_pr(remote: GitHubDouble, options: BotOptions) -> None:
    run(options, FakeVerifier())
    closed = pull_on(remote, KANDINSKY_BRANCH).number
    before = show(remote.bare_repo, "main", KANDINSKY)
    apply_by_hand(remote, KANDINSKY_BRANCH, KANDINSKY)
    run(options, FakeVerifier())
    push_branch(remote.bare_repo, "main", {KANDINSKY: before})  # the hand-applied fix is reverted

    summary = run(options, FakeVerifier())

    assert outcomes(summary)[KANDINSKY_BRANCH] == "opened"
    assert [p.number for p in remote.pull_requests("open") if p.head_ref == KANDINSKY_BRANCH] == [5]
    assert remote.pull_request(closed).state == "closed"


def test_a_run_outside_the_prs_files_closes_nothing(remote: GitHubDouble, options: BotOptions) -> None:
    run(options, FakeVerifier())
    number = pull_on(remote, KANDINSKY_BRANCH).number
    apply_by_hand(remote, KANDINSKY_BRANCH, KANDINSKY)

    summary = run(with_options(options, only=("pipelines/t2i_adapter",)), FakeVerifier())

    assert summary.pulls == []
    assert remote.pull_request(number).state == "open"


def test_a_dry_run_lists_the_closings_and_rebuilds_and_makes_none(
    remote: GitHubDouble, options: BotOptions, moved_main: MovedMain, tmp_path: Path
) -> None:
    refs, writes = remote_refs(remote.bare_repo), len(remote.requests()) - len(remote.requests("GET"))

    summary = run(with_options(options, dry_run=True, bodies_dir=tmp_path / "bodies"), FakeVerifier())

    assert outcomes(summary) == {
        KANDINSKY_BRANCH: "would-close",
        ADAPTER_BRANCH: "would-rebuild",
        AUTOENCODER_BRANCH: "unchanged",
        PNDM_BRANCH: "unchanged",
    }
    text = summary.text()
    assert (
        f"  would-close    #{moved_main.pulls[KANDINSKY_BRANCH].number} [{KANDINSKY_BRANCH}]: no longer needed: its "
        f"change is on main since {moved_main.landed[:10]} (Update main)"
    ) in text
    assert (
        f"  would-rebuild  DIF004 pipelines/t2i_adapter #{moved_main.pulls[ADAPTER_BRANCH].number} [{ADAPTER_BRANCH}]: "
        f"main changed its files (now {moved_main.shifted[:10]}); rebuilt on it: 1 of 1 target(s) verified"
    ) in text
    assert len(remote.requests()) - len(remote.requests("GET")) == writes
    assert remote_refs(remote.bare_repo) == refs


def test_the_dashboard_shows_the_prs_closed_and_rebuilt_this_run(
    remote: GitHubDouble, dashboard_options: BotOptions, moved_main: MovedMain
) -> None:
    closed, rebuilt = (moved_main.pulls[branch] for branch in (KANDINSKY_BRANCH, ADAPTER_BRANCH))

    summary = run(dashboard_options, FakeVerifier())

    body = remote.issue(summary.dashboard.number).body
    assert (
        f"## Closed as no longer needed (1)\n\n- #{closed.number} {closed.title}: closed this run, no longer needed: "
        f"its change is on main since {moved_main.landed[:10]} (Update main); branch deleted\n"
    ) in body
    assert "## Closed by a maintainer (0)" in body
    line = next(line for line in body.splitlines() if line.startswith(f"- #{rebuilt.number} "))
    assert line.endswith(f" · _rebuilt on `main@{moved_main.shifted[:10]}` this run_")


def test_a_changed_fix_on_a_pr_opened_before_rewrites_were_counted_names_its_files() -> None:
    group = FixGroup(
        "DIF004",
        ("pipelines/flux",),
        {"src/diffusers/pipelines/flux/a.py": ("x\n", "y\n"), "src/diffusers/pipelines/flux/b.py": ("x\n", "y\n")},
        (Rewrite("src/diffusers/pipelines/flux/a.py", 1, "m"), Rewrite("src/diffusers/pipelines/flux/b.py", 1, "m")),
    )
    old_body = "...\n<!-- codemod-fingerprint: dif004-0123456789abcdef rule=DIF004 files=src/diffusers/pipelines/flux/a.py -->\n"

    comment = change_comment(old_body, group, "main", "0123456789abcdef")

    assert comment.startswith(
        "`main` moved to 0123456789 and this fix changed: now 2 rewrites in 2 files "
        "(now also `src/diffusers/pipelines/flux/b.py`). "
    )


def test_three_runs_with_main_moved_by_hand_between_the_first_two(
    remote: GitHubDouble, options: BotOptions, moved_main: MovedMain
) -> None:
    edit_a_fixed_line(remote)

    second = run(options, FakeVerifier())
    writes = len(remote.requests()) - len(remote.requests("GET"))
    third = run(options, FakeVerifier())

    assert set(outcomes(moved_main.first).values()) == {"opened"}
    assert outcomes(second) == {
        KANDINSKY_BRANCH: "closed",
        ADAPTER_BRANCH: "rebuilt",
        AUTOENCODER_BRANCH: "updated",
        PNDM_BRANCH: "unchanged",
    }
    assert outcomes(third) == {ADAPTER_BRANCH: "unchanged", AUTOENCODER_BRANCH: "unchanged", PNDM_BRANCH: "unchanged"}
    assert len(remote.requests()) - len(remote.requests("GET")) == writes
    assert [p.head_ref for p in remote.pull_requests("open")] == sorted(
        [ADAPTER_BRANCH, AUTOENCODER_BRANCH, PNDM_BRANCH]
    )


def test_the_plan_job_sends_a_pr_whose_files_main_changed_to_verification(
    remote: GitHubDouble, options: BotOptions, tmp_path: Path
) -> None:
    run(options, FakeVerifier())
    shift_down(remote, KANDINSKY)

    planned = plan(options, tmp_path / "plan.json")

    assert planned.to_verify == ["dif004-pipelines-kandinsky"]
