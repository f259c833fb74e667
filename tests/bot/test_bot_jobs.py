"""The CI split: `codemod bot plan` (CPU), `verify-group` (GPU), `publish` (token), run as the workflow runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bot_harness import REPO, FakeVerifier, options_fixture, remote_fixture, remote_refs  # noqa: F401  (fixtures)
from diffusers_tree import EXPECTED_GROUPS
from github_double import GitHubDouble

from bot.plan import Plan
from bot.runner import BotOptions, verify_one

IDS = [
    "dif004-models-autoencoders-autoencoder-kl",
    "dif004-pipelines-kandinsky",
    "dif004-pipelines-pndm",
    "dif004-pipelines-t2i-adapter",
]


def codemod(*args: str, token: str | None, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"} | ({"GITHUB_TOKEN": token} if token else {})
    return subprocess.run(
        [sys.executable, "-m", "codemod_cli", *args], capture_output=True, text=True, env=env, cwd=cwd, check=False
    )


def plan_with_cli(remote: GitHubDouble, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    return codemod(
        "bot", "plan", "--repo", REPO, "--api-url", remote.api_url, "--select", "DIF004",
        "--workdir", str(tmp_path / "work"), "--out", str(tmp_path / "plan.json"), "--request-interval", "0", *extra,
        token=remote.token, cwd=tmp_path,
    )  # fmt: skip


def test_plan_writes_the_groups_and_what_to_verify_with_reads_only(remote: GitHubDouble, tmp_path: Path) -> None:
    refs = remote_refs(remote.bare_repo)

    done = plan_with_cli(remote, tmp_path, "--max-open-prs", "3")

    assert done.returncode == 0, done.stderr
    plan = Plan.load(tmp_path / "plan.json")
    assert [g.branch for g in plan.groups] == sorted(EXPECTED_GROUPS)
    assert plan.to_verify == IDS[:3]  # the cap leaves room for three
    assert done.stdout.endswith(f"to verify: {' '.join(IDS[:3])}\n")
    assert {r.method for r in remote.requests()} == {"GET"} and remote_refs(remote.bare_repo) == refs


def test_publish_opens_prs_for_verified_reports_only(remote: GitHubDouble, tmp_path: Path) -> None:
    assert plan_with_cli(remote, tmp_path).returncode == 0
    options = BotOptions(repo=REPO, workdir=tmp_path / "gpu-runner", log=lambda _: None)
    verifier = FakeVerifier({"kandinsky": "regressed"})
    for group_id in IDS[:3]:  # the fourth group's GPU job did not report
        verify_one(options, tmp_path / "plan.json", group_id, tmp_path / "reports" / f"{group_id}.json", verifier)

    done = codemod(
        "bot", "publish", "--plan", str(tmp_path / "plan.json"), "--reports", str(tmp_path / "reports"),
        "--api-url", remote.api_url, "--workdir", str(tmp_path / "pr-runner"), "--json", str(tmp_path / "summary.json"),
        "--request-interval", "0", token=remote.token, cwd=tmp_path,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [(g["group_id"], g["outcome"], g["reason"]) for g in summary["groups"]] == [
        (IDS[0], "opened", "1 of 1 target(s) verified"),
        (IDS[1], "not-verified", "regressed: pipeline_kandinsky: regressed"),
        (IDS[2], "opened", "1 of 1 target(s) verified"),
        (IDS[3], "not-verified", "not verified in this run"),
    ]
    assert summary["counts"] == {"groups": 4, "verified": 2, "opened": 2, "updated": 0, "skipped": 0, "not-verified": 2}
    assert [p.head_ref for p in remote.pull_requests()] == [sorted(EXPECTED_GROUPS)[0], sorted(EXPECTED_GROUPS)[2]]
    assert remote.token not in done.stdout + done.stderr


def test_unknown_repository_is_one_line_and_exit_2(remote: GitHubDouble, tmp_path: Path) -> None:
    done = codemod(
        "bot", "plan", "--repo", "someone/else", "--api-url", remote.api_url, "--out", str(tmp_path / "plan.json"),
        token=remote.token, cwd=tmp_path,
    )  # fmt: skip

    assert (done.returncode, done.stderr) == (2, "codemod: error: GitHub answered 404: Not Found\n")


def test_a_run_that_would_write_needs_a_token(tmp_path: Path) -> None:
    done = codemod("bot", "run", "--repo", REPO, token=None, cwd=tmp_path)

    assert done.returncode == 2
    assert done.stderr == (
        "codemod: error: GITHUB_TOKEN is not set: the bot needs a token to push and open PRs (or use --dry-run)\n"
    )


def test_importing_the_cli_loads_neither_pygithub_nor_torch() -> None:
    code = "import sys, codemod_cli.app; print(sorted({m.split('.')[0] for m in sys.modules} & {'github', 'torch', 'requests', 'diffusers'}))"

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert done.stdout == "[]\n"
