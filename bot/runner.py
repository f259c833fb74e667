"""The bot's four doors: `run` (all in one process), and `plan` / `verify_group` / `publish` (one per CI job).

All of them are stateless: the clone under `workdir` is only a cache, and GitHub is asked
again for what exists before anything is written.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from bot import body as bodies
from bot.git import Git, GitError, GitIdentity
from bot.github_api import ClientSettings, GitHubUnavailable, connect, unavailable_reason
from bot.groups import FixGroup, find_groups
from bot.plan import Plan
from bot.publish import Publisher, PublishSettings
from bot.pulls import PullRequests
from bot.summary import RunSummary
from bot.verification import Verification, Verifier, real_verifier, verify_group
from codemods.rules import select_rules


def _stderr(message: str) -> None:
    print(f"codemod bot: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class BotOptions:
    repo: str  # OWNER/NAME
    token: str | None = None
    api_url: str = "https://api.github.com"
    clone_url: str | None = None  # None: the repository's clone URL from the API
    base: str | None = None  # None: the repository's default branch
    dry_run: bool = False
    max_open_prs: int = 5
    select: tuple[str, ...] | None = None
    only: tuple[str, ...] = ()  # paths inside src/diffusers to limit the engine to
    device: str = "emu"
    compile: bool = False
    python: Path | None = None  # runs the trees; None: the checkout's own environment, built once
    torch_index: str | None = None  # where that environment gets torch (a CPU or CUDA wheel index)
    workdir: Path = Path(".codemod-bot")
    bodies_dir: Path | None = None  # dry runs default to <workdir>/bodies
    label: str = "performance"
    login: str | None = None  # the bot's GitHub login; None: the token's user
    identity: GitIdentity = field(default_factory=GitIdentity)
    client: ClientSettings = field(default_factory=ClientSettings)
    log: Callable[[str], None] = field(default=_stderr, compare=False)


class Session:
    """What one invocation shares: the GitHub client (made on first use) and the clone."""

    def __init__(self, options: BotOptions) -> None:
        self.options = options

    @cached_property
    def pulls(self) -> PullRequests:
        options = self.options
        gh = connect(options.api_url, options.token, options.client)
        repo = gh.get_repo(options.repo)
        login = options.login or gh.get_user().login
        return PullRequests(gh, repo, login, options.dry_run)

    def git(self, clone_url: str) -> Git:
        root = self.options.workdir.resolve() / "clones" / self.options.repo.replace("/", "__")
        return Git(root, clone_url, self.options.token)

    def publisher(self, plan: Plan, git: Git) -> Publisher:
        options = self.options
        bodies_dir = options.bodies_dir or (options.workdir / "bodies" if options.dry_run else None)
        settings = PublishSettings(options.max_open_prs, options.dry_run, options.label, options.identity, bodies_dir)
        return Publisher(plan, git, self.pulls, settings, options.log)


def make_plan(session: Session) -> tuple[Plan, Git]:
    """Clone or update the target at its base branch and group the engine's fixes."""
    options = session.options
    base = options.base or session.pulls.repo.default_branch
    git = session.git(options.clone_url or session.pulls.repo.clone_url)
    options.log(f"syncing {options.repo}@{base} into {git.root}")
    base_sha = git.sync(base)
    rules = tuple(rule.code for rule in select_rules(options.select))
    grouping = find_groups(git.root, rules, options.only, options.workdir.resolve() / "cache", options.log)
    plan = Plan(options.repo, git.clone_url, base, base_sha, grouping.groups, grouping.errors)
    options.log(f"{len(plan.groups)} fix group(s) on {base_sha[:10]}")
    return plan, git


def run(options: BotOptions, verifier: Verifier | None = None) -> RunSummary:
    """Plan, verify (only the groups that may go ahead, lazily) and publish, in one process."""
    session = Session(options)
    try:
        plan, git = make_plan(session)
    except Exception as error:  # GitHub or git trouble ends the run with a summary; anything else propagates
        return _stopped(options, error)
    chosen = verifier or real_verifier(options.python, options.torch_index, options.log)

    def verification(group: FixGroup) -> Verification:
        options.log(f"verifying {group.id} on {options.device}")
        result = _verify(options, git, plan, group, chosen)
        result.save(options.workdir / "reports" / f"{group.id}.json")
        return result

    return session.publisher(plan, git).publish(verification)


def plan(options: BotOptions, out: Path) -> Plan:
    """The CPU job: the plan file, with the ids worth verifying now."""
    session = Session(options)
    plan, git = make_plan(session)
    plan.to_verify = session.publisher(plan, git).candidates()
    plan.save(out)
    return plan


def verify_one(
    options: BotOptions, plan_file: Path, group_id: str, out: Path, verifier: Verifier | None = None
) -> Verification:
    """The GPU job: verify one group of a plan on the plan's commit."""
    plan = Plan.load(plan_file)
    group = plan.group(group_id)
    git = Session(options).git(plan.clone_url)
    git.sync(plan.base)
    git.checkout(plan.base_sha)
    chosen = verifier or real_verifier(options.python, options.torch_index, options.log)
    result = _verify(options, git, plan, group, chosen)
    result.save(out)
    return result


def publish(options: BotOptions, plan_file: Path, reports: Path) -> RunSummary:
    """The PR job: publish a plan's groups whose reports (from `verify_one`) say verified."""
    session = Session(options)
    try:
        plan = Plan.load(plan_file)
        git = session.git(plan.clone_url)
        git.sync(plan.base)
        if not git.has_commit(plan.base_sha):
            git.checkout(plan.base_sha)
    except Exception as error:  # as in `run`
        return _stopped(options, error)

    def verification(group: FixGroup) -> Verification | None:
        report = reports / f"{group.id}.json"
        return Verification.load(report) if report.is_file() else None

    return session.publisher(plan, git).publish(verification)


def _verify(options: BotOptions, git: Git, plan: Plan, group: FixGroup, verifier: Verifier) -> Verification:
    for path, (before, _) in group.files.items():
        if (git.root / path).read_text("utf-8") != before:
            raise GitError(f"{path} at {plan.base_sha[:10]} is not what the plan was made from")
    return verify_group(
        verifier,
        git.root,
        group,
        device=options.device,
        work_dir=options.workdir.resolve() / "verify" / group.id,
        compile=options.compile,
        reproduce=bodies.reproduce_command(group, plan.base_sha, options.device),
    )


def _stopped(options: BotOptions, error: Exception) -> RunSummary:
    """A run that could not even plan: GitHub or git failed; say so without a traceback."""
    if isinstance(error, (GitHubUnavailable, GitError)):
        reason = str(error)
    else:
        reason = unavailable_reason(error)
        if reason is None:
            raise error
    return RunSummary(options.repo, options.base, dry_run=options.dry_run, stopped=reason)
