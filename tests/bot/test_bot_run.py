"""`codemod bot run` end to end: real git against a bare remote, real PyGithub against the double."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bot_harness import PULLS, FakeVerifier, options_fixture, remote_fixture, remote_refs, show, with_options  # noqa: F401  (fixtures)
from diffusers_tree import EXPECTED_GROUPS, PACKAGE
from github_double import GitHubDouble, push_branch

from bot.runner import BotOptions, run
from bot.summary import Outcome

TOOL_HEAD = subprocess.run(
    ["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True
).stdout.strip()

KANDINSKY = f"{PACKAGE}/pipelines/kandinsky/pipeline_kandinsky.py"
KANDINSKY_BRANCH = "codemod/dif004/pipelines-kandinsky"


def outcomes(summary) -> dict[str, str]:
    return {g.branch: g.outcome.value for g in summary.groups}


def kandinsky_group(summary):
    return next(g for g in summary.groups if g.branch == KANDINSKY_BRANCH)


def open_heads(double: GitHubDouble) -> list[str]:
    return [p.head_ref for p in double.pull_requests("open")]


def test_first_run_opens_one_pr_per_group_with_the_verifiers_table(remote: GitHubDouble, options: BotOptions) -> None:
    summary = run(options, FakeVerifier())

    assert outcomes(summary) == {branch: "opened" for branch in EXPECTED_GROUPS}
    pulls = remote.pull_requests()
    assert [(p.head_ref, p.base_ref, p.author.login) for p in pulls] == [
        (branch, "main", "codemod-bot") for branch in sorted(EXPECTED_GROUPS)
    ]
    kandinsky = next(p for p in pulls if p.head_ref == KANDINSKY_BRANCH)
    assert kandinsky.title == "[DIF004] output-attribute-access in pipelines/kandinsky"
    assert "| `pipeline_kandinsky` | verified | 3 | 0 | 0.0 |" in kandinsky.body
    assert f"| `{KANDINSKY}` | 14 |" in kandinsky.body
    # The tool is not on PyPI: the reproduce block installs it from git at the commit that ran (this checkout's HEAD).
    assert f"pip install 'diffusers-codemod[verify] @ git+https://github.com/diffusers-codemod/diffusers-codemod@{TOOL_HEAD}'\n" in kandinsky.body
    assert f"codemod run --diff --unsafe-fixes --select=DIF004 {KANDINSKY}\n" in kandinsky.body
    assert f"codemod verify src/diffusers --select=DIF004 --path={KANDINSKY} --device=emu\n" in kandinsky.body
    assert (
        f"<!-- codemod-fingerprint: {kandinsky_group(summary).fingerprint} rule=DIF004 files={KANDINSKY} rewrites=1 -->"
        in kandinsky.body
    )
    assert [label.name for label in kandinsky.labels] == ["performance"]
    assert summary.exit_code() == 0


def test_branches_hold_one_bot_commit_with_the_rewritten_files(remote: GitHubDouble, options: BotOptions) -> None:
    run(options, FakeVerifier())

    after = show(remote.bare_repo, KANDINSKY_BRANCH, KANDINSKY)
    assert "image = self.movq.decode(latents, force_not_quantize=True, return_dict=False)[0]" in after
    assert (
        show(remote.bare_repo, "main", KANDINSKY).replace(
            'force_not_quantize=True)["sample"]', "force_not_quantize=True, return_dict=False)[0]"
        )
        == after
    )
    log = _git_log(remote.bare_repo, f"main..{KANDINSKY_BRANCH}")
    assert len(log) == 1
    subject, author, body = log[0]
    assert subject == "[DIF004] output-attribute-access in pipelines/kandinsky"
    assert author == "diffusers-codemod[bot] <codemod-bot@users.noreply.github.com>"
    assert "Evidence: verifier on emu: verified (1 of 1 target(s) verified)." in body
    assert f"  {KANDINSKY}" in body


def test_a_test_edit_the_fix_needs_is_committed_on_the_groups_branch(remote: GitHubDouble, options: BotOptions) -> None:
    test_file = "tests/pipelines/kandinsky/test_kandinsky.py"
    edit = (
        "class KandinskyCompileTests:\n    def test_compile(self):\n        super().test_compile(recompile_limit=2)\n"
    )
    run(options, FakeVerifier(test_edits={"kandinsky/pipeline_kandinsky.py": {test_file: edit}}))

    assert show(remote.bare_repo, KANDINSKY_BRANCH, test_file) == edit
    assert len(_git_log(remote.bare_repo, f"main..{KANDINSKY_BRANCH}")) == 1


def test_copied_from_source_and_copy_are_one_pr(remote: GitHubDouble, options: BotOptions) -> None:
    run(options, FakeVerifier())

    branch = "codemod/dif004/pipelines-pndm"
    files = _git_changed_files(remote.bare_repo, f"main...{branch}")
    assert files == EXPECTED_GROUPS[branch]
    body = next(p.body for p in remote.pull_requests() if p.head_ref == branch)
    assert "PNDMPipeline.__call__" in body and "`pipelines/ddim`" in body


def test_second_run_opens_nothing_new(remote: GitHubDouble, options: BotOptions) -> None:
    run(options, FakeVerifier())
    refs = remote_refs(remote.bare_repo)
    verifier = FakeVerifier()

    summary = run(options, verifier)

    assert outcomes(summary) == {branch: "unchanged" for branch in EXPECTED_GROUPS}
    assert len(remote.pull_requests()) == 4
    assert remote_refs(remote.bare_repo) == refs
    assert verifier.calls == []  # nothing to publish, nothing verified
    assert [r for r in remote.requests() if r.method != "GET"][-1].path.endswith("/issues/4/labels")


def test_pr_closed_by_a_maintainer_is_not_recreated(remote: GitHubDouble, options: BotOptions) -> None:
    run(options, FakeVerifier())
    closed = next(p.number for p in remote.pull_requests() if p.head_ref == KANDINSKY_BRANCH)
    remote.close_pull_request(closed)

    summary = run(options, FakeVerifier())

    assert outcomes(summary)[KANDINSKY_BRANCH] == "skipped"
    assert kandinsky_group(summary).reason == f"#{closed} was closed without merging; not reopened"
    assert len(remote.pull_requests()) == 4
    assert remote.pull_request(closed).state == "closed"


def test_closed_pr_blocks_a_changed_fix_for_the_same_rule_and_family(remote: GitHubDouble, options: BotOptions) -> None:
    run(options, FakeVerifier())
    closed = next(p.number for p in remote.pull_requests() if p.head_ref == KANDINSKY_BRANCH)
    remote.close_pull_request(closed)
    push_branch(remote.bare_repo, "main", {KANDINSKY: _kandinsky_with_a_second_read(remote)})

    summary = run(options, FakeVerifier())

    assert (
        kandinsky_group(summary).reason
        == f"#{closed} (DIF004 in pipelines/kandinsky) was closed without merging; not recreated"
    )
    assert len(remote.pull_requests()) == 4


def test_merged_fix_is_skipped(remote: GitHubDouble, options: BotOptions) -> None:
    run(options, FakeVerifier())
    merged = next(p.number for p in remote.pull_requests() if p.head_ref == KANDINSKY_BRANCH)
    remote.merge_pull_request(merged)  # the double leaves main as it was, so the engine finds the fix again

    summary = run(options, FakeVerifier())

    merged_group = kandinsky_group(summary)
    assert (merged_group.outcome, merged_group.reason) == (Outcome.SKIPPED, f"already merged in #{merged}")


def test_changed_fix_updates_the_open_pr_in_place(remote: GitHubDouble, options: BotOptions) -> None:
    run(options, FakeVerifier())
    before = remote_refs(remote.bare_repo)[f"refs/heads/{KANDINSKY_BRANCH}"]
    push_branch(remote.bare_repo, "main", {KANDINSKY: _kandinsky_with_a_second_read(remote)})

    summary = run(options, FakeVerifier())

    assert outcomes(summary)[KANDINSKY_BRANCH] == "updated"
    assert len(remote.pull_requests()) == 4
    pull = next(p for p in remote.pull_requests() if p.head_ref == KANDINSKY_BRANCH)
    assert f"<!-- codemod-fingerprint: {kandinsky_group(summary).fingerprint} " in pull.body
    assert remote_refs(remote.bare_repo)[f"refs/heads/{KANDINSKY_BRANCH}"] not in (before, pull.base_sha)
    assert "return_dict=False)[0] * 2" in show(remote.bare_repo, KANDINSKY_BRANCH, KANDINSKY)


def test_human_commit_on_a_bot_branch_stops_updates(remote: GitHubDouble, options: BotOptions) -> None:
    run(options, FakeVerifier())
    human = push_branch(remote.bare_repo, KANDINSKY_BRANCH, {"NOTES.md": "maintainer's tweak\n"})
    push_branch(remote.bare_repo, "main", {KANDINSKY: _kandinsky_with_a_second_read(remote)})

    summary = run(options, FakeVerifier())

    assert outcomes(summary)[KANDINSKY_BRANCH] == "skipped"
    assert kandinsky_group(summary).reason == (
        f"branch {KANDINSKY_BRANCH} has commits by Double Tester <tester@example.com>; the bot no longer touches it"
    )
    assert remote_refs(remote.bare_repo)[f"refs/heads/{KANDINSKY_BRANCH}"] == human
    assert remote.requests("PATCH", PULLS + rf"/{kandinsky_group(summary).pull_number}") == []


def test_cap_holds_and_a_later_run_opens_the_rest(remote: GitHubDouble, options: BotOptions) -> None:
    capped = with_options(options, max_open_prs=2)

    first = run(capped, FakeVerifier())
    again = run(capped, FakeVerifier())
    remote.close_pull_request(1)
    after_close = run(capped, FakeVerifier())

    assert list(outcomes(first).values()) == ["opened", "opened", "waiting", "waiting"]
    assert first.groups[2].reason == "2 open bot PRs (cap 2); a later run opens it"
    assert list(outcomes(again).values()) == ["unchanged", "unchanged", "waiting", "waiting"]
    assert list(outcomes(after_close).values()) == ["skipped", "unchanged", "opened", "waiting"]
    assert len(open_heads(remote)) == 2


def test_groups_the_verifier_does_not_verify_are_listed_and_not_pushed(
    remote: GitHubDouble, options: BotOptions
) -> None:
    verifier = FakeVerifier({"kandinsky": "regressed", "t2i_adapter": "no-gain"})

    summary = run(options, verifier)

    assert list(outcomes(summary).values()) == ["opened", "not-verified", "opened", "not-verified"]
    assert kandinsky_group(summary).reason == "regressed: pipeline_kandinsky: regressed"
    assert summary.groups[3].verdict == "no-gain"
    assert f"refs/heads/{KANDINSKY_BRANCH}" not in remote_refs(remote.bare_repo)
    assert summary.exit_code() == 0


def test_dry_run_changes_nothing_anywhere_and_writes_the_bodies(
    remote: GitHubDouble, options: BotOptions, tmp_path: Path
) -> None:
    refs = remote_refs(remote.bare_repo)

    summary = run(with_options(options, dry_run=True, bodies_dir=tmp_path / "bodies"), FakeVerifier())

    assert outcomes(summary) == {branch: "would-open" for branch in EXPECTED_GROUPS}
    assert {r.method for r in remote.requests()} == {"GET"}
    assert remote_refs(remote.bare_repo) == refs
    assert sorted(p.name for p in (tmp_path / "bodies").iterdir()) == [
        "dif004-models-autoencoders-autoencoder-kl.md",
        "dif004-pipelines-kandinsky.md",
        "dif004-pipelines-pndm.md",
        "dif004-pipelines-t2i-adapter.md",
    ]
    body = (tmp_path / "bodies" / "dif004-pipelines-kandinsky.md").read_text()
    assert body.startswith("# [DIF004] output-attribute-access in pipelines/kandinsky\n")
    assert "<!-- codemod-fingerprint: dif004-" in body
    assert "[dry run]" in summary.text()
    assert summary.text().endswith(f"\nPR bodies: {tmp_path / 'bodies'}")


def test_a_pull_request_by_someone_else_is_left_alone(remote: GitHubDouble, options: BotOptions) -> None:
    remote.add_human_pull_request("alice", "codemod/dif004/pipelines-kandinsky", "My own codemod branch")

    run(options, FakeVerifier())

    assert [p.author.login for p in remote.pull_requests()] == ["alice", *["codemod-bot"] * 4]
    assert remote.requests("PATCH", PULLS + r"/1") == []


def _kandinsky_with_a_second_read(remote: GitHubDouble) -> str:
    text = show(remote.bare_repo, "main", KANDINSKY)
    return text.replace(
        '        image = self.movq.decode(latents, force_not_quantize=True)["sample"]\n',
        '        image = self.movq.decode(latents, force_not_quantize=True)["sample"] * 2\n',
    )


def _git_log(bare_repo: Path, revisions: str) -> list[tuple[str, str, str]]:
    out = subprocess.run(
        ["git", "--git-dir", str(bare_repo), "log", "--format=%s%x00%an <%ae>%x00%b%x01", revisions],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [tuple(entry.strip("\n").split("\x00")) for entry in out.split("\x01") if entry.strip()]


def _git_changed_files(bare_repo: Path, revisions: str) -> list[str]:
    out = subprocess.run(
        ["git", "--git-dir", str(bare_repo), "diff", "--name-only", revisions],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.split()
