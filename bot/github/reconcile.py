"""Open bot PRs that no fix group of this run holds: closed as no longer needed (Renovate's autoclose).

A PR is still needed while a group of this run has its branch or its fingerprint. One that no
group holds is judged only when the run could have found its fix: its rule ran, its files were in
the engine's scope and read without error. The base then either holds the PR's change (a
maintainer applied it by hand) or no longer has its findings (the code changed); git says which,
and which of the base's commits did it. A branch with a human's commit is never touched: it is
reported, and a maintainer closes it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from bot.github.git import BOT_BRANCH_PREFIX, Git, GitError, GitIdentity, PushRejected
from bot.github.pulls import KnownPull, PullRequests
from bot.groups import PACKAGE_DIR
from bot.plan import Plan
from bot.summary import Outcome, PullOutcome


@dataclass(frozen=True)
class UnneededPull:
    """An open bot PR whose fix the base no longer needs, and why."""

    pull: KnownPull
    branch: str
    base: str  # the base branch's name
    remote_sha: str  # the branch as the bot last saw it: deleted only if still there
    landed: bool  # True: the base holds the PR's change; False: its findings are gone
    commit: str  # the base's commit that did it
    subject: str  # that commit's subject line
    humans: tuple[str, ...]  # authors of commits on the branch other than the bot's

    @property
    def reason(self) -> str:
        at = f"{self.commit[:10]} ({self.subject})"
        return (
            f"its change is on {self.base} since {at}"
            if self.landed
            else f"{self.base} has no such findings since {at}"
        )

    @property
    def comment(self) -> str:
        """The one line posted on the PR as it is closed."""
        return (
            f"No longer needed: {self.reason}. "
            f"The bot closes this PR and deletes its branch `{self.branch}`; it opens a new one if the fix is needed again."
        )


def unneeded_pulls(
    plan: Plan, git: Git, pulls: Iterable[KnownPull], login: str, identity: GitIdentity
) -> list[UnneededPull]:
    """The bot's open PRs on its own branches that this run's plan shows are no longer needed."""
    held = {g.branch for g in plan.groups} | {g.fingerprint for g in plan.groups}
    found = []
    for pull in sorted(pulls, key=lambda p: p.number):
        branch = pull.head_ref
        if pull.state != "open" or branch is None or not branch.startswith(BOT_BRANCH_PREFIX):
            continue
        if pull.author.lower() != login.lower() or branch in held or pull.fingerprint in held:
            continue
        try:
            unneeded = _judge(plan, git, pull, branch, identity)
        except GitError:  # e.g. a branch with no history in common with the base: what cannot be judged stays open
            continue
        if unneeded is not None:
            found.append(unneeded)
    return found


def close_unneeded(unneeded: UnneededPull, git: Git, pulls: PullRequests) -> tuple[PullOutcome, KnownPull]:
    """Close the PR with its one-line comment and delete its branch (unless a human pushed to it, or a dry run)."""

    def outcome(kind: Outcome, reason: str) -> PullOutcome:
        pull = unneeded.pull
        return PullOutcome(pull.number, pull.url, unneeded.branch, kind, reason, unneeded.commit)

    if unneeded.humans:
        by = ", ".join(unneeded.humans)
        reason = f"no longer needed ({unneeded.reason}), but branch has commits by {by}: left alone, close it by hand"
        return outcome(Outcome.SKIPPED, reason), unneeded.pull
    if pulls.dry_run:
        return outcome(Outcome.WOULD_CLOSE, f"no longer needed: {unneeded.reason}"), unneeded.pull
    closed = pulls.close_as_not_needed(unneeded.pull, unneeded.commit, unneeded.comment)
    try:
        git.delete_branch(unneeded.branch, unneeded.remote_sha)
        deleted = "branch deleted"
    except PushRejected as rejected:
        deleted = f"branch kept: {rejected}"
    return outcome(Outcome.CLOSED, f"no longer needed: {unneeded.reason}; {deleted}"), closed


def _judge(plan: Plan, git: Git, pull: KnownPull, branch: str, identity: GitIdentity) -> UnneededPull | None:
    """The PR as unneeded, or None when this run cannot tell (another rule, files out of scope or unread)."""
    rule = branch.removeprefix(BOT_BRANCH_PREFIX).split("/", 1)[0].upper()
    remote_sha = git.remote_sha(branch)
    if rule not in plan.rules or remote_sha is None:
        return None
    fork_point = git.fork_point(plan.base_sha, remote_sha)
    files = git.changed_files(fork_point, remote_sha)
    package_files = [f for f in files if PurePosixPath(f).is_relative_to(PACKAGE_DIR)]
    in_scope = all(any(PurePosixPath(f).is_relative_to(s) for s in plan.scope) for f in package_files)
    unread = any(error.startswith(f"{f}:") for f in package_files for error in plan.engine_errors)
    if not package_files or not in_scope or unread:
        return None
    # The fix is what the PR changes in the package (a test edit, a human's note may differ and still it landed).
    # Oldest first: the first of the base's commits since the PR's base at which those files read as the PR has them.
    log = ("log", "--reverse", "--format=%H", f"{fork_point}..{plan.base_sha}", "--", *package_files)
    commits = git.run(*log).splitlines()
    landed = not git.changed_files(plan.base_sha, remote_sha, package_files)
    if landed:
        commit = next((c for c in commits if not git.changed_files(c, remote_sha, package_files)), plan.base_sha)
    else:
        commit = commits[-1] if commits else plan.base_sha
    humans = tuple(sorted({c.author for c in git.foreign_commits(plan.base, branch, identity)}))
    subject = git.run("log", "-1", "--format=%s", commit)
    return UnneededPull(pull, branch, plan.base, remote_sha, landed, commit, subject, humans)
