"""The bot's doors: `run` (all in one process), and `plan` / `verify_one` / `census` / `publish` (one per CI job).

All of them are stateless: the clone under `workdir` is only a cache, and GitHub is asked
again for what exists before anything is written.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from bot.github import body as bodies
from bot.github.api import ClientSettings, GitHubUnavailable, connect, unavailable_reason
from bot.github.dashboard.issue import DashboardIssue, DashboardState
from bot.github.dashboard.update import CensusSource, update_dashboard
from bot.github.git import Git, GitError, GitIdentity
from bot.github.publish import Publisher, PublishSettings, VerificationSource
from bot.github.pulls import PullRequests
from bot.groups import PACKAGE_DIR, FixGroup, find_groups
from bot.plan import Plan
from bot.summary import RunSummary
from bot.verification import Verification, Verifier, real_verifier, verify_group
from bot.verify.reporting.html_report import write_html
from bot.verify.reporting.report import VerifyReport
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
    dashboard: bool = True  # keep the dashboard issue (read its ticks, write its body)
    census: CensusSource = field(default_factory=CensusSource)
    run_url: str | None = None  # the workflow run, linked from the dashboard
    login: str | None = None  # the bot's GitHub login; None: the token's user
    identity: GitIdentity = field(default_factory=GitIdentity)
    client: ClientSettings = field(default_factory=ClientSettings)
    log: Callable[[str], None] = field(default=_stderr, compare=False)

    @property
    def scan_cache(self) -> Path:
        """The engine's scan cache: the planning run fills it, each group's verification reuses it on its copies."""
        return self.workdir.resolve() / "cache"


class Session:
    """What one invocation shares: the GitHub client (made on first use) and the clone."""

    def __init__(self, options: BotOptions) -> None:
        self.options = options

    @cached_property
    def pulls(self) -> PullRequests:
        options = self.options
        gh = connect(options.api_url, options.token, options.client, options.log)
        repo = gh.get_repo(options.repo)
        login = options.login or gh.get_user().login
        return PullRequests(gh, repo, login, options.dry_run)

    @cached_property
    def dashboard(self) -> DashboardIssue | None:
        if not self.options.dashboard:
            return None
        pulls = self.pulls
        return DashboardIssue(pulls.repo, pulls.login, self.options.label, self.options.dry_run)

    def read_dashboard(self) -> DashboardState:
        """The dashboard's ticks, read before anything is decided (an empty state with --no-dashboard)."""
        return self.dashboard.read() if self.dashboard is not None else DashboardState()

    @property
    def bodies_dir(self) -> Path | None:
        options = self.options
        return options.bodies_dir or (options.workdir / "bodies" if options.dry_run else None)

    def git(self, clone_url: str) -> Git:
        root = self.options.workdir.resolve() / "clones" / self.options.repo.replace("/", "__")
        return Git(root, clone_url, self.options.token)

    def publisher(self, plan: Plan, git: Git, board: DashboardState) -> Publisher:
        options = self.options
        settings = PublishSettings(
            options.max_open_prs, options.dry_run, options.label, options.identity, self.bodies_dir, board.ticks
        )
        return Publisher(plan, git, self.pulls, settings, options.log)

    def publish(self, plan: Plan, git: Git, board: DashboardState, verifications: VerificationSource) -> RunSummary:
        """Publish the groups, then write the dashboard from what the run found and did."""
        seen: list[Verification] = []

        def recorded(group: FixGroup) -> Verification | None:
            result = verifications(group)
            if result is not None:
                seen.append(result)
            return result

        publisher = self.publisher(plan, git, board)
        summary = publisher.publish(recorded)
        if self.dashboard is not None:
            census = self.options.census
            bodies_dir = self.bodies_dir
            summary.dashboard = update_dashboard(
                self.dashboard,
                board,
                plan,
                summary,
                list(publisher.known.by_number.values()),
                census.targets(seen),
                census.page_url,
                self.options.run_url,
                bodies_dir / "dashboard.md" if bodies_dir is not None else None,
            )
        return summary


def make_plan(session: Session) -> tuple[Plan, Git]:
    """Clone or update the target at its base branch and group the engine's fixes."""
    options = session.options
    base = options.base or session.pulls.repo.default_branch
    git = session.git(options.clone_url or session.pulls.repo.clone_url)
    options.log(f"syncing {options.repo}@{base} into {git.root}")
    base_sha = git.sync(base)
    rules = tuple(rule.code for rule in select_rules(options.select))
    grouping = find_groups(git.root, rules, options.only, options.scan_cache, options.log)
    plan = Plan(
        options.repo,
        git.clone_url,
        base,
        base_sha,
        grouping.groups,
        grouping.errors,
        report_only=grouping.report_only,
        rules=list(rules),
        scope=grouping.scope,
    )
    options.log(f"{len(plan.groups)} fix group(s) on {base_sha[:10]}")
    return plan, git


def run(options: BotOptions, verifier: Verifier | None = None) -> RunSummary:
    """Plan, verify (only the groups that may go ahead, lazily) and publish, in one process."""
    session = Session(options)
    try:
        plan, git = make_plan(session)
        board = session.read_dashboard()
    except Exception as error:  # GitHub or git trouble ends the run with a summary; anything else propagates
        return _stopped(options, error)
    with _verifier(options, verifier) as chosen:

        def verification(group: FixGroup) -> Verification:
            options.log(f"verifying {group.id} on {options.device}")
            result = _verify(options, git, plan, group, chosen)
            result.save(options.workdir / "reports" / f"{group.id}.json")
            return result

        return session.publish(plan, git, board, verification)


def plan(options: BotOptions, out: Path) -> Plan:
    """The CPU job: the plan file, with the ids worth verifying now."""
    session = Session(options)
    plan, git = make_plan(session)
    plan.to_verify = session.publisher(plan, git, session.read_dashboard()).candidates()
    plan.save(out)
    return plan


def verify_one(
    options: BotOptions, plan_file: Path, group_id: str, out: Path, verifier: Verifier | None = None
) -> Verification:
    """The GPU job: verify one group of a plan on the plan's commit."""
    plan = Plan.load(plan_file)
    group = plan.group(group_id)
    git = _checkout(options, plan)
    with _verifier(options, verifier) as chosen:
        result = _verify(options, git, plan, group, chosen)
    result.save(out)
    return result


def census(
    options: BotOptions, plan_file: Path, json_out: Path, html_out: Path, verifier: Verifier | None = None
) -> VerifyReport:
    """The census job: every fix of the selected rules on the plan's commit, verified at once; JSON and HTML page."""
    plan = Plan.load(plan_file)
    git = _checkout(options, plan)
    with _verifier(options, verifier) as chosen:
        report = chosen(
            git.root / PACKAGE_DIR,
            select=options.select,
            device=options.device,
            work_dir=options.workdir.resolve() / "census",
            compile=options.compile,
            progress=options.log,
        )
    data = report.to_json()
    json_out.parent.mkdir(parents=True, exist_ok=True)
    json_out.write_text(json.dumps(data, indent=2) + "\n")
    write_html(data, html_out)
    return report


def _verifier(options: BotOptions, given: Verifier | None) -> AbstractContextManager[Verifier]:
    """The verifier a job was given (tests), else the real one in the checkout's own environment, for a block: the
    real one's zygote serves every group the block verifies (its log in the work directory's `verify/`)."""
    if given is not None:
        return nullcontext(given)
    return real_verifier(options.workdir.resolve() / "verify", options.python, options.torch_index, options.log)


def _checkout(options: BotOptions, plan: Plan) -> Git:
    git = Session(options).git(plan.clone_url)
    git.sync(plan.base)
    git.checkout(plan.base_sha)
    return git


def publish(options: BotOptions, plan_file: Path, reports: Path) -> RunSummary:
    """The PR job: publish a plan's groups whose reports (from `verify_one`) say verified."""
    session = Session(options)
    try:
        plan = Plan.load(plan_file)
        git = session.git(plan.clone_url)
        git.sync(plan.base)
        if not git.has_commit(plan.base_sha):
            git.checkout(plan.base_sha)
        board = session.read_dashboard()
    except Exception as error:  # as in `run`
        return _stopped(options, error)

    def verification(group: FixGroup) -> Verification | None:
        report = reports / f"{group.id}.json"
        return Verification.load(report) if report.is_file() else None

    return session.publish(plan, git, board, verification)


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
        cache_dir=options.scan_cache,
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
