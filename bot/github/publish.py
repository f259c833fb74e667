"""Per group: look up what GitHub holds, check etiquette, verify, commit, push, open, update or rebuild the PR.

The order matters: open PRs the base no longer needs are closed first (freeing room under the
cap); everything that can refuse a group (a closed PR, the cap, a human's commit on the branch)
is checked before the verifier spends GPU time on it, and the push comes before the PR, so a
rejected push leaves nothing behind on GitHub. A GitHub outage stops the run; what was done so
far is in the summary.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bot.github import body as bodies
from bot.github.api import GitHubUnavailable, error_message, unavailable_reason
from bot.github.dashboard.ticks import Ticks
from bot.github.etiquette import Action, Decision, KnownPulls, decide
from bot.github.git import Git, GitIdentity, PushRejected
from bot.github.pulls import KnownPull, PullRequests
from bot.github.reconcile import UnneededPull, close_unneeded, unneeded_pulls
from bot.groups import FixGroup
from bot.plan import Plan
from bot.summary import GroupOutcome, Outcome, PullOutcome, RunSummary
from bot.verification import Verification

VerificationSource = Callable[[FixGroup], Verification | None]
# What a published group's decision becomes, for real and in a dry run.
_PUBLISHED = {
    Action.OPEN: (Outcome.OPENED, Outcome.WOULD_OPEN),
    Action.UPDATE: (Outcome.UPDATED, Outcome.WOULD_UPDATE),
    Action.REBUILD: (Outcome.REBUILT, Outcome.WOULD_REBUILD),
}


@dataclass(frozen=True)
class PublishSettings:
    max_open_prs: int
    dry_run: bool
    label: str
    identity: GitIdentity
    bodies_dir: Path | None
    ticks: Ticks = field(default_factory=Ticks)  # what a maintainer ticked on the dashboard


@dataclass
class _Triage:
    """A group that may go ahead: what to do, and the remote branch it would replace (None: absent)."""

    decision: Decision
    remote_sha: str | None


class Publisher:
    def __init__(
        self, plan: Plan, git: Git, pulls: PullRequests, settings: PublishSettings, log: Callable[[str], None]
    ) -> None:
        self.plan = plan
        self.git = git
        self.pulls = pulls
        self.settings = settings
        self.log = log
        self.known = KnownPulls({})
        self.open_count = 0
        self.bodies_written = 0

    def candidates(self) -> list[str]:
        """Ids of the groups a publish would verify now: updates, and new ones up to the cap (for the plan job)."""
        self._load_known()
        self.open_count -= sum(not unneeded.humans for unneeded in self._unneeded())
        chosen = []
        for group in self.plan.groups:
            triage = self._triage(group)
            if isinstance(triage, _Triage):
                chosen.append(group.id)
                self.open_count += triage.decision.action is Action.OPEN
        return chosen

    def publish(self, verifications: VerificationSource) -> RunSummary:
        summary = RunSummary(self.plan.repo, self.plan.base, self.plan.base_sha, self.settings.dry_run)
        summary.engine_errors = list(self.plan.engine_errors)
        try:
            self._load_known()
        except Exception as error:  # GitHub trouble stops the run with a summary; anything else propagates
            summary.stopped = self._stop_reason(error)
        if not summary.stopped:
            self._close_unneeded(summary)
        for group in self.plan.groups:
            if summary.stopped:
                summary.groups.append(_outcome(group, Outcome.NOT_ATTEMPTED, "the run stopped before this group"))
                continue
            try:
                summary.groups.append(self._publish_one(group, verifications))
            except Exception as error:  # one group's trouble is its outcome; GitHub's stops the run
                reason = unavailable_reason(error) if not isinstance(error, GitHubUnavailable) else str(error)
                if reason is None:
                    summary.groups.append(_outcome(group, Outcome.FAILED, error_message(error)))
                    continue
                summary.stopped = reason
                summary.groups.append(_outcome(group, Outcome.FAILED, f"GitHub failed during this group: {reason}"))
        if self.bodies_written:
            summary.bodies_dir = str(self.settings.bodies_dir)
        return summary

    # Steps

    def _load_known(self) -> None:
        self.known = KnownPulls.merge(self.pulls.open_bot_pulls(), self.pulls.fingerprinted_pulls())
        self.open_count = self.known.open_count()

    def _unneeded(self) -> list[UnneededPull]:
        pulls = self.known.by_number.values()
        return unneeded_pulls(self.plan, self.git, pulls, self.pulls.login, self.settings.identity)

    def _close_unneeded(self, summary: RunSummary) -> None:
        """Close the open PRs the base no longer needs, before any group takes a place under the cap."""
        for unneeded in self._unneeded():
            pull = unneeded.pull
            try:
                outcome, pull = close_unneeded(unneeded, self.git, self.pulls)
            except Exception as error:  # as for a group: its own failure, or GitHub's, which stops the run
                reason = unavailable_reason(error) if not isinstance(error, GitHubUnavailable) else str(error)
                summary.pulls.append(
                    PullOutcome(pull.number, pull.url, unneeded.branch, Outcome.FAILED, reason or error_message(error))
                )
                if reason is not None:
                    summary.stopped = reason
                    return
                continue
            summary.pulls.append(outcome)
            self.known.by_number[pull.number] = pull
            if outcome.outcome in (Outcome.CLOSED, Outcome.WOULD_CLOSE):
                self.open_count -= 1
                self.log(f"{outcome.outcome.value} #{pull.number}: {outcome.reason}")

    def _triage(self, group: FixGroup) -> _Triage | GroupOutcome:
        if group.id in self.settings.ticks.ignored:
            return _outcome(group, Outcome.IGNORED, "ignored on the dashboard; untick it there to bring it back")
        self.known = KnownPulls.merge(list(self.known.by_number.values()), self.pulls.pulls_on_branch(group.branch))
        decision = decide(group, self.known)
        if decision.action is Action.UNCHANGED and self._behind_base(group.branch):
            moved = f"{self.plan.base} changed its files (now {self.plan.base_sha[:10]}); rebuilt on it"
            decision = Decision(Action.REBUILD, moved, decision.pull)
        if decision.action is Action.SKIP:
            return _outcome(group, Outcome.SKIPPED, decision.reason, decision.pull)
        if decision.action is Action.UNCHANGED:
            return _outcome(group, Outcome.UNCHANGED, decision.reason, decision.pull)
        above_cap = decision.action is Action.OPEN and self.open_count >= self.settings.max_open_prs
        if above_cap and group.id in self.settings.ticks.open_now:
            self.log(f'{group.id}: "open this PR now" is ticked on the dashboard; going above the cap')
        elif above_cap:
            reason = f"{self.open_count} open bot PRs (cap {self.settings.max_open_prs}); a later run opens it"
            return _outcome(group, Outcome.WAITING, reason)
        remote_sha = self.git.remote_sha(group.branch)
        if remote_sha is not None:
            foreign = self.git.foreign_commits(self.plan.base, group.branch, self.settings.identity)
            if foreign:
                authors = ", ".join(sorted({commit.author for commit in foreign}))
                reason = f"branch {group.branch} has commits by {authors}; the bot no longer touches it"
                return _outcome(group, Outcome.SKIPPED, reason, decision.pull)
        return _Triage(decision, remote_sha)

    def _behind_base(self, branch: str) -> bool:
        """The base changed a file the branch changes since the branch was built: its diff, line numbers and
        table describe a tree that is gone (or it conflicts). A base that moved elsewhere leaves it be: it still
        merges cleanly, and re-verifying every open PR on every commit of main would spend the GPU for nothing."""
        remote_sha = self.git.remote_sha(branch)
        if remote_sha is None:
            return False
        fork_point = self.git.fork_point(self.plan.base_sha, remote_sha)
        return bool(
            self.git.changed_files(fork_point, self.plan.base_sha, self.git.changed_files(fork_point, remote_sha))
        )

    def _publish_one(self, group: FixGroup, verifications: VerificationSource) -> GroupOutcome:
        triage = self._triage(group)
        if isinstance(triage, GroupOutcome):
            return triage
        decision = triage.decision
        verification = verifications(group)
        if verification is None:
            return _outcome(group, Outcome.NOT_VERIFIED, "not verified in this run", decision.pull)
        if verification.fingerprint != group.fingerprint:
            return _outcome(
                group, Outcome.NOT_VERIFIED, "the verification is of another version of this fix", decision.pull
            )
        if not verification.verified:
            return _outcome(group, Outcome.NOT_VERIFIED, verification.reason, decision.pull, verification.verdict)
        title = bodies.title(group)
        text = bodies.body(group, verification)
        if self.settings.bodies_dir is not None:
            self.settings.bodies_dir.mkdir(parents=True, exist_ok=True)
            (self.settings.bodies_dir / f"{group.id}.md").write_text(f"# {title}\n\n{text}")
            self.bodies_written += 1
        opening = decision.action is Action.OPEN
        done, would = _PUBLISHED[decision.action]
        reason = verification.reason if opening else f"{decision.reason}: {verification.reason}"
        if self.settings.dry_run:
            self.open_count += opening
            return _outcome(group, would, reason, decision.pull, verification.verdict)
        commit = self.git.commit_files(
            self.plan.base_sha,
            {**{path: after for path, (_, after) in group.files.items()}, **verification.test_edits},
            bodies.commit_message(group, verification),
            self.settings.identity,
        )
        try:
            self.git.push(commit, group.branch, expected=triage.remote_sha)
        except PushRejected as rejected:
            return _outcome(group, Outcome.FAILED, f"push rejected: {rejected}", decision.pull, verification.verdict)
        self.log(f"pushed {group.branch} ({commit[:10]})")
        if opening:
            pull, reconciled = self.pulls.create(title, text, group.branch, self.plan.base)
            self.known = KnownPulls.merge(list(self.known.by_number.values()), [pull])
            self.open_count += 1
            if reconciled and pull.fingerprint != group.fingerprint:
                self.pulls.update(pull, title, text)
        else:
            assert decision.pull is not None
            pull = decision.pull
            previous_body = pull.handle.body
            self.pulls.update(pull, title, text)
            if decision.action is Action.UPDATE:
                self.pulls.comment(
                    pull, bodies.change_comment(previous_body, group, self.plan.base, self.plan.base_sha)
                )
        self.pulls.ensure_label(pull, self.settings.label)
        self.log(f"{done.value} #{pull.number} for {group.id}")
        return _outcome(group, done, reason, pull, verification.verdict)

    @staticmethod
    def _stop_reason(error: BaseException) -> str:
        if isinstance(error, GitHubUnavailable):
            return str(error)
        reason = unavailable_reason(error)
        if reason is None:
            raise error
        return reason


def _outcome(
    group: FixGroup, outcome: Outcome, reason: str, pull: KnownPull | None = None, verdict: str | None = None
) -> GroupOutcome:
    return GroupOutcome(
        group_id=group.id,
        rule=group.rule,
        families=list(group.families),
        branch=group.branch,
        fingerprint=group.fingerprint,
        files=sorted(group.files),
        outcome=outcome,
        reason=reason,
        pull_number=pull.number if pull else None,
        pull_url=pull.url if pull else None,
        verdict=verdict,
    )
