"""GitHub and git failing under the bot: no duplicate PR, nothing left half-done, a clear summary."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from bot_harness import PULLS, FakeVerifier, options_fixture, reject_pushes_to, remote_fixture, remote_refs  # noqa: F401  (fixtures)
from diffusers_tree import EXPECTED_GROUPS
from github_double import Fault, GitHubDouble, push_branch

from bot.runner import BotOptions, run
from bot.summary import Outcome

KANDINSKY_BRANCH = "codemod/dif004/pipelines-kandinsky"
ALREADY_EXISTS = {
    "message": "Validation Failed",
    "errors": [{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for x."}],
}


def statuses(double: GitHubDouble, method: str, path: str) -> list[int]:
    return [entry.status for entry in double.requests(method, path)]


def heads(double: GitHubDouble) -> list[str]:
    return sorted(p.head_ref for p in double.pull_requests())


def test_502_after_the_create_went_through_is_reconciled_not_repeated(
    remote: GitHubDouble, options: BotOptions
) -> None:
    remote.inject(Fault.server_error("POST", PULLS, 502, applied=True))

    summary = run(options, FakeVerifier())

    assert [g.outcome for g in summary.groups] == [Outcome.OPENED] * 4
    assert statuses(remote, "POST", PULLS) == [502, 201, 201, 201]
    assert heads(remote) == sorted(EXPECTED_GROUPS)
    assert [label.name for label in remote.pull_request(1).labels] == ["performance"]


def test_502_before_the_create_is_retried_once_it_is_known_not_to_exist(
    remote: GitHubDouble, options: BotOptions
) -> None:
    remote.inject(Fault.server_error("POST", PULLS, 502))

    summary = run(options, FakeVerifier())

    assert summary.exit_code() == 0
    assert statuses(remote, "POST", PULLS) == [502, 201, 201, 201, 201]
    assert heads(remote) == sorted(EXPECTED_GROUPS)


def test_already_exists_is_resolved_by_finding_the_existing_pr(remote: GitHubDouble, options: BotOptions) -> None:
    remote.inject(Fault("POST", PULLS, 422, body=ALREADY_EXISTS, applied=True))

    summary = run(options, FakeVerifier())

    assert [g.pull_number for g in summary.groups] == [1, 2, 3, 4]
    assert statuses(remote, "POST", PULLS) == [422, 201, 201, 201]


def test_github_down_from_the_start_ends_cleanly_with_nothing_done(remote: GitHubDouble, options: BotOptions) -> None:
    remote.inject(Fault.server_error("GET", PULLS, 503, times=100))
    refs = remote_refs(remote.bare_repo)

    summary = run(options, FakeVerifier())

    assert summary.exit_code() == 1
    assert summary.stopped is not None and summary.stopped.startswith("GitHub kept failing after retries")
    assert [g.outcome for g in summary.groups] == [Outcome.NOT_ATTEMPTED] * 4
    assert "stopped early: GitHub kept failing after retries" in summary.text()
    assert statuses(remote, "GET", PULLS) == [503] * 4  # one try and 3 retries
    assert remote.requests("POST") == [] and remote_refs(remote.bare_repo) == refs


def test_outage_mid_run_stops_there_and_the_next_run_finishes_without_duplicates(
    remote: GitHubDouble, options: BotOptions
) -> None:
    outage = FakeVerifier(during={"kandinsky": lambda: remote.inject(Fault.server_error("POST", PULLS, 502, times=2))})

    first = run(options, outage)
    second = run(options, FakeVerifier())

    assert [g.outcome.value for g in first.groups] == ["opened", "failed", "not-attempted", "not-attempted"]
    assert first.groups[1].reason == "GitHub failed during this group: GitHub answered 502 (Bad Gateway)"
    assert first.exit_code() == 1
    assert [g.outcome.value for g in second.groups] == ["unchanged", "opened", "opened", "opened"]
    assert heads(remote) == sorted(EXPECTED_GROUPS)


def test_secondary_rate_limit_is_waited_out(remote: GitHubDouble, options: BotOptions) -> None:
    remote.inject(Fault.secondary_rate_limit("POST", PULLS, retry_after=1))
    started = time.monotonic()

    summary = run(options, FakeVerifier())

    assert time.monotonic() - started >= 1
    assert statuses(remote, "POST", PULLS) == [403, 201, 201, 201, 201]
    assert summary.exit_code() == 0 and len(remote.pull_requests()) == 4


def test_primary_rate_limit_is_waited_out_until_its_reset(remote: GitHubDouble, options: BotOptions) -> None:
    remote.inject(Fault.primary_rate_limit("GET", r"/search/issues", reset_in=0))

    summary = run(options, FakeVerifier())

    assert statuses(remote, "GET", r"/search/issues") == [403, 200]
    assert summary.exit_code() == 0 and len(remote.pull_requests()) == 4


def test_rate_limit_resetting_later_than_the_bot_waits_ends_the_run_cleanly(
    remote: GitHubDouble, options: BotOptions
) -> None:
    remote.inject(Fault.primary_rate_limit("GET", r"/search/issues", reset_in=3600))

    summary = run(options, FakeVerifier())

    assert summary.stopped is not None and summary.stopped.startswith(
        "GitHub rate limit exceeded (API rate limit exceeded"
    )
    assert summary.exit_code() == 1 and remote.pull_requests() == []


def test_429_that_does_not_end_stops_the_run_cleanly(remote: GitHubDouble, options: BotOptions) -> None:
    remote.inject(Fault.too_many_requests("GET", r"/repos/huggingface/diffusers", retry_after=0, times=100))

    summary = run(options, FakeVerifier())

    assert statuses(remote, "GET", r"/repos/huggingface/diffusers") == [429] * 4
    assert summary.stopped is not None and summary.stopped.startswith("GitHub answered 429 (You have exceeded")
    assert summary.groups == [] and summary.exit_code() == 1


def test_rejected_push_leaves_no_pr_behind(remote: GitHubDouble, options: BotOptions) -> None:
    reject_pushes_to(remote.bare_repo, f"refs/heads/{KANDINSKY_BRANCH}")

    summary = run(options, FakeVerifier())

    assert [g.outcome.value for g in summary.groups] == ["opened", "failed", "opened", "opened"]
    assert summary.groups[1].reason == "push rejected: [remote rejected] (pre-receive hook declined)"
    assert summary.exit_code() == 1
    assert KANDINSKY_BRANCH not in heads(remote)
    assert f"refs/heads/{KANDINSKY_BRANCH}" not in remote_refs(remote.bare_repo)
    assert (
        "\n  failed  DIF004 pipelines/kandinsky [codemod/dif004/pipelines-kandinsky]: push rejected: [remote"
        in summary.text()
    )


def test_branch_moved_since_the_fetch_is_not_overwritten(remote: GitHubDouble, options: BotOptions) -> None:
    moved = FakeVerifier(during={"kandinsky": lambda: push_branch(remote.bare_repo, KANDINSKY_BRANCH, {"x.md": "x\n"})})

    summary = run(options, moved)

    assert summary.groups[1].outcome is Outcome.FAILED
    assert summary.groups[1].reason == "push rejected: [rejected] (stale info)"
    assert KANDINSKY_BRANCH not in heads(remote)


def test_unreachable_github_is_said_at_each_retry_and_ends_the_run_in_seconds(tmp_path: Path) -> None:
    # A bound socket that never listens: every connection to it is refused, and no other test can take the port.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        api = "http://127.0.0.1:%d" % closed.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}
        command = [sys.executable, "-m", "codemod_cli", "bot", "run", "--repo", "you/diffusers", "--dry-run"]
        # The real client settings (2 connection retries): the subprocess's timeout is the bound.
        done = subprocess.run(
            [*command, "--api-url", api, "--workdir", str(tmp_path / "work")],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip

    host = api.removeprefix("http://")
    refused = "GET /repos/you/diffusers: cannot connect ([Errno 111] Connection refused)"
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"codemod bot: GitHub: {refused}; retry 1 of 2 in 0 s",
        f"codemod bot: GitHub: {refused}; retry 2 of 2 in 4 s",
    ]
    assert done.stdout.splitlines()[-1] == (
        f"stopped early: cannot reach GitHub at {host} ([Errno 111] Connection refused): check the network and --api-url"
    )
