"""Per group: look up what GitHub holds, check etiquette, verify, commit, push, open or update the PR.

The order matters: everything that can refuse a group (a closed PR, the cap, a human's commit
on the branch) is checked before the verifier spends GPU time on it, and the push comes
before the PR, so a rejected push leaves nothing behind on GitHub. A GitHub outage stops the
run; what was done so far is in the summary.
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
from bot.groups import FixGroup
from bot.plan import Plan
from bot.summary import GroupOutcome, Outcome, RunSummary
from bot.verification import Verification

VerificationSource = Callable[[FixGroup], Verification | None]


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

    def _triage(self, group: FixGroup) -> _Triage | GroupOutcome:
        if group.id in self.settings.ticks.ignored:
            return _outcome(group, Outcome.IGNORED, "ignored on the dashboard; untick it there to bring it back")
        self.known = KnownPulls.merge(list(self.known.by_number.values()), self.pulls.pulls_on_branch(group.branch))
        decision = decide(group, self.known)
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
        if self.settings.dry_run:
            self.open_count += opening
            outcome = Outcome.WOULD_OPEN if opening else Outcome.WOULD_UPDATE
            return _outcome(group, outcome, verification.reason, decision.pull, verification.verdict)
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
            self.pulls.update(pull, title, text)
        self.pulls.ensure_label(pull, self.settings.label)
        outcome = Outcome.OPENED if opening else Outcome.UPDATED
        self.log(f"{outcome.value} #{pull.number} for {group.id}")
        return _outcome(group, outcome, verification.reason, pull, verification.verdict)

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
