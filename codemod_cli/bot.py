"""`codemod bot ...`: the PR bot's commands. Imports only typer here; the bot itself (PyGithub,
and torch for verification) is imported when a command runs, so `codemod run` stays light.

The token comes from the GITHUB_TOKEN environment variable only: never an option (it would
show in process lists and CI logs), never printed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from codemod_cli.extras import require_extras
from codemod_cli.options import (
    API_URL,
    MAX_OPEN_PRS,
    REQUEST_INTERVAL,
    WORKDIR,
    ApiUrl,
    Base,
    BodiesDir,
    Census,
    CensusUrl,
    CloneUrl,
    Compile,
    Device,
    DeviceOption,
    DryRun,
    Interval,
    JsonOut,
    Login,
    MaxOpenPrs,
    NoDashboard,
    Only,
    PlanFile,
    Python,
    Repo,
    Select,
    TorchIndex,
    Workdir,
)
from codemod_cli.run import rule_codes

EXIT_CODES = """\
Exit codes: 0 every group was handled (opened, updated, or skipped/waiting with a reason);
1 the run stopped early (GitHub unavailable, rate limited) or a group failed (e.g. its push
was rejected); 2 bad arguments or configuration, or a module the command needs not installed."""

bot_app = typer.Typer(
    name="bot",
    help=f"Open verified fix PRs on a diffusers repository (token: GITHUB_TOKEN).\n\n{EXIT_CODES}",
    add_completion=False,
    rich_markup_mode=None,
    no_args_is_help=True,
)


def _options(**values: Any):
    from bot.github.api import ClientSettings
    from bot.github.dashboard.update import CensusSource
    from bot.runner import BotOptions

    values["select"] = rule_codes(values.pop("select", None))
    values["only"] = tuple(values.pop("only", None) or ())
    if "device" in values:
        values["device"] = values["device"].value
    values["dashboard"] = not values.pop("no_dashboard", False)
    if "census" in values or "census_url" in values:
        values["census"] = CensusSource(values.pop("census", None), values.pop("census_url", None))
    if "request_interval" in values:
        interval = values.pop("request_interval")
        values["client"] = replace(
            ClientSettings(), seconds_between_requests=interval, seconds_between_writes=4 * interval
        )
    return BotOptions(token=os.environ.get("GITHUB_TOKEN") or None, run_url=_workflow_run_url(), **values)


def _workflow_run_url() -> str | None:
    """This run's page when running in GitHub Actions (its documented default variables), else None."""
    parts = [os.environ.get(name) for name in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")]
    return "{}/{}/actions/runs/{}".format(*parts) if all(parts) else None


def _require_token(dry_run: bool) -> None:
    if not dry_run and not os.environ.get("GITHUB_TOKEN"):
        from codemods.errors import UsageError

        raise UsageError("GITHUB_TOKEN is not set: the bot needs a token to push and open PRs (or use --dry-run)")


def _finish(summary, json_file: Path | None) -> None:
    board = summary.dashboard
    if summary.dry_run and board is not None and board.body:
        print(f"--- dashboard body ({board.action}, {board.chars:,} characters) ---")
        print(board.body, end="")
        print("--- end of the dashboard body ---")
    print(summary.text())
    if json_file is not None:
        summary.write_json(json_file)
    raise typer.Exit(summary.exit_code())


@bot_app.command(epilog=EXIT_CODES)
def run(
    repo: Repo,
    clone_url: CloneUrl = None,
    api_url: ApiUrl = API_URL,
    base: Base = None,
    dry_run: DryRun = False,
    max_open_prs: MaxOpenPrs = MAX_OPEN_PRS,
    select: Select = None,
    only: Only = None,
    device: DeviceOption = Device.emu,
    compile: Compile = False,
    python: Python = None,
    torch_index: TorchIndex = None,
    workdir: Workdir = WORKDIR,
    bodies_dir: BodiesDir = None,
    login: Login = None,
    request_interval: Interval = REQUEST_INTERVAL,
    json_file: JsonOut = None,
    no_dashboard: NoDashboard = False,
    census: Census = None,
    census_url: CensusUrl = None,
) -> None:
    """Clone, find and group fixes, verify them, open or update one PR per verified group, update the dashboard."""
    require_extras("bot run", "bot", "verify")
    from bot import runner

    _require_token(dry_run)
    options = _options(
        repo=repo, clone_url=clone_url, api_url=api_url, base=base, dry_run=dry_run, max_open_prs=max_open_prs,
        select=select, only=only, device=device, compile=compile, workdir=workdir, bodies_dir=bodies_dir, login=login,
        request_interval=request_interval, no_dashboard=no_dashboard, census=census, census_url=census_url,
        python=python, torch_index=torch_index,
    )  # fmt: skip
    with _errors_as_usage():
        summary = runner.run(options)
    _finish(summary, json_file)


@bot_app.command(epilog=EXIT_CODES)
def plan(
    repo: Repo,
    out: Annotated[Path, typer.Option(metavar="FILE", help="Where to write the plan (JSON).")],
    clone_url: CloneUrl = None,
    api_url: ApiUrl = API_URL,
    base: Base = None,
    max_open_prs: MaxOpenPrs = MAX_OPEN_PRS,
    select: Select = None,
    only: Only = None,
    workdir: Workdir = WORKDIR,
    login: Login = None,
    request_interval: Interval = REQUEST_INTERVAL,
    no_dashboard: NoDashboard = False,
) -> None:
    """CPU job: group the fixes and list the groups worth verifying now (read-only on GitHub)."""
    require_extras("bot plan", "bot")
    from bot import runner

    options = _options(
        repo=repo, clone_url=clone_url, api_url=api_url, base=base, max_open_prs=max_open_prs, select=select,
        only=only, workdir=workdir, login=login, dry_run=True, request_interval=request_interval,
        no_dashboard=no_dashboard,
    )  # fmt: skip
    with _errors_as_usage():
        made = runner.plan(options, out)
    print(
        f"{len(made.groups)} fix group(s) on {made.base}@{made.base_sha[:10]}; to verify: {' '.join(made.to_verify) or 'none'}"
    )


@bot_app.command("verify-group", epilog=EXIT_CODES)
def verify_group(
    plan_file: PlanFile,
    group: Annotated[str, typer.Option(metavar="ID", help="A group id from the plan.")],
    out: Annotated[Path, typer.Option(metavar="FILE", help="Where to write the verification (JSON).")],
    device: DeviceOption = Device.cuda,
    compile: Compile = False,
    python: Python = None,
    torch_index: TorchIndex = None,
    workdir: Workdir = WORKDIR,
) -> None:
    """GPU job: verify one group of a plan; exit 0 whatever the verdict (it is in the file)."""
    require_extras("bot verify-group", "bot", "verify")
    from bot import runner
    from bot.plan import Plan

    with _errors_as_usage():
        options = _options(
            repo=Plan.load(plan_file).repo, device=device, compile=compile, workdir=workdir, python=python,
            torch_index=torch_index,
        )  # fmt: skip
        result = runner.verify_one(options, plan_file, group, out)
    print(f"{group}: {result.verdict} ({result.reason})")


@bot_app.command(epilog=EXIT_CODES)
def census(
    plan_file: PlanFile,
    json_file: Annotated[Path, typer.Option("--json", metavar="FILE", help="Where to write the verify report.")],
    html_file: Annotated[Path, typer.Option("--html", metavar="FILE", help="Where to write the census page.")],
    select: Select = None,
    device: DeviceOption = Device.cuda,
    compile: Compile = False,
    workdir: Workdir = WORKDIR,
) -> None:
    """GPU job: the sync census of the whole library on the plan's commit (for the dashboard and its page)."""
    require_extras("bot census", "bot", "verify")
    from bot import runner
    from bot.plan import Plan

    with _errors_as_usage():
        options = _options(
            repo=Plan.load(plan_file).repo, select=select, device=device, compile=compile, workdir=workdir
        )
        report = runner.census(options, plan_file, json_file, html_file)
    print(f"census: {report.counts()} in {report.seconds:.0f} s; page: {html_file}")


@bot_app.command(epilog=EXIT_CODES)
def publish(
    plan_file: PlanFile,
    reports: Annotated[Path, typer.Option(metavar="DIR", help="verify-group outputs, named <group id>.json.")],
    api_url: ApiUrl = API_URL,
    dry_run: DryRun = False,
    max_open_prs: MaxOpenPrs = MAX_OPEN_PRS,
    workdir: Workdir = WORKDIR,
    bodies_dir: BodiesDir = None,
    login: Login = None,
    request_interval: Interval = REQUEST_INTERVAL,
    json_file: JsonOut = None,
    no_dashboard: NoDashboard = False,
    census: Census = None,
    census_url: CensusUrl = None,
) -> None:
    """PR job: push and open or update the PRs of a plan's verified groups, then update the dashboard."""
    require_extras("bot publish", "bot")
    from bot import runner
    from bot.plan import Plan

    _require_token(dry_run)
    with _errors_as_usage():
        options = _options(
            repo=Plan.load(plan_file).repo, api_url=api_url, dry_run=dry_run, max_open_prs=max_open_prs,
            workdir=workdir, bodies_dir=bodies_dir, login=login, request_interval=request_interval,
            no_dashboard=no_dashboard, census=census, census_url=census_url,
        )  # fmt: skip
        summary = runner.publish(options, plan_file, reports)
    _finish(summary, json_file)


@bot_app.command(epilog=EXIT_CODES)
def whoami(api_url: ApiUrl = API_URL) -> None:
    """Print the login of GITHUB_TOKEN's user: the bot's login wherever --login is not given."""
    require_extras("bot whoami", "bot")
    from bot.github.api import ClientSettings, connect
    from codemods.errors import UsageError

    token = os.environ.get("GITHUB_TOKEN")
    if not token:
        raise UsageError("GITHUB_TOKEN is not set: `codemod bot whoami` asks GitHub whose token it is")
    with _errors_as_usage():
        print(connect(api_url, token, ClientSettings()).get_user().login)


@contextmanager
def _errors_as_usage() -> Iterator[None]:
    """Errors a user fixes (a wrong repository, a token without access, a bad plan file): one line, exit 2."""
    import github

    from bot.github.api import error_message
    from bot.github.git import GitError
    from bot.plan import PlanError
    from codemods.errors import UsageError

    try:
        yield
    except github.GithubException as error:
        raise UsageError(error_message(error)) from None
    except (GitError, PlanError, FileNotFoundError) as error:
        raise UsageError(str(error)) from None
