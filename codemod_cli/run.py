"""`codemod run`: apply, show or report the fixes, in text, JSON, SARIF or GitHub annotations."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from codemod_cli.options import NoCache, Select
from codemods.errors import RunInterrupted, UsageError

if TYPE_CHECKING:
    from codemods.engine.run_inputs import RunInputs
    from codemods.engine.run_result import RunOptions, RunResult

# The one prefix of every error line, whether the run stopped (exit 2) or one file could not be handled.
ERROR_PREFIX = "codemod: error: "
EXIT_CODES = """\
Exit codes: 0 nothing left to report; 1 findings remain (with --diff/--check: there would be
changes/findings); 2 an error (bad arguments, a file that cannot be read or parsed, a rule that
failed on a file); 130 interrupted (Ctrl-C), with one line saying what was written."""


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


def rule_codes(values: list[str] | None) -> tuple[str, ...] | None:
    """`--select`/`--ignore` values, each a code or a comma-separated list, as one tuple of codes."""
    if values is None:
        return None
    return tuple(code.strip() for value in values for code in value.split(",") if code.strip())


def run(
    paths: Annotated[list[str], typer.Argument(metavar="PATH...", help="Files and directories (recursing into *.py).")],
    diff: Annotated[bool, typer.Option("--diff", help="Print a unified diff of the fixes; write nothing.")] = False,
    check: Annotated[bool, typer.Option("--check", help="List findings; write nothing.")] = False,
    unsafe_fixes: Annotated[bool, typer.Option("--unsafe-fixes", help="Also apply fixes that need verification.")] = False,
    select: Select = None,
    ignore: Annotated[list[str] | None, typer.Option(metavar="CODES", help="Rule codes or prefixes to leave out.")] = None,
    output_format: Annotated[OutputFormat, typer.Option("--format", help="text, json, sarif or github.")] = OutputFormat.text,
    jobs: Annotated[int, typer.Option(min=0, metavar="N", help="Worker processes (0: one per core).")] = 0,
    no_cache: NoCache = False,
    opt_in: Annotated[
        list[str] | None,
        typer.Option(
            "--opt-in",
            metavar="NAME",
            help="Take a fix a rule offers only on request, as `[tool.codemod] opt-in` does (the names are in each "
            "rule's `codemod explain`); repeatable.",
        ),
    ] = None,
    context: Annotated[
        Path | None,
        typer.Option(
            "--context",
            envvar="CODEMOD_CONTEXT",
            metavar="DIR",
            help="A diffusers package directory (a checkout's src/diffusers, or the installed one) in which files "
            "outside any package look up the diffusers classes they use; default: none, so a lone file gives the "
            "same findings wherever diffusers is installed. The summary says when it was used. Also CODEMOD_CONTEXT.",
        ),
    ] = None,
    include_cold: Annotated[
        bool,
        typer.Option(
            "--include-cold",
            help="Also list findings not paid per denoising step (once per generation or call, the last step only, "
            "a model no pipeline runs per step); fixes are applied either way.",
        ),
    ] = False,
    check_repo: Annotated[
        bool,
        typer.Option(
            "--check-repo",
            help="Run the checkout's own checks (Makefile quality/repo-consistency, PR workflows) before and after "
            "writing; fail if the fixes break one.",
        ),
    ] = False,
) -> None:
    """Apply safe fixes in place (default), or show them (--diff), or only report (--check)."""
    from codemods.engine.cache import cache_directory
    from codemods.engine.run_inputs import RunInputs
    from codemods.engine.run_result import Mode, RunOptions

    if diff and check:
        raise UsageError("--diff and --check cannot be used together")
    if "" in paths:  # Path("") would quietly mean the current directory
        raise UsageError("an empty string is not a path")
    if check_repo and (diff or check):
        raise UsageError("--check-repo checks what a run writes: not with --diff or --check")
    if context is not None and not (context / "__init__.py").is_file():
        raise UsageError(f"--context {context}: not a package directory (no __init__.py); give e.g. src/diffusers")
    in_place = _repo_checks_before(tuple(map(Path, paths))) if check_repo else None
    options = RunOptions(
        paths=tuple(map(Path, paths)),
        # SARIF carries each fix's replacement text, so a read-only SARIF run computes (and proves) the fixes.
        mode=Mode.DIFF if diff or (check and output_format is OutputFormat.sarif) else Mode.CHECK if check else Mode.WRITE,
        unsafe_fixes=unsafe_fixes,
        select=rule_codes(select),
        ignore=rule_codes(ignore),
        jobs=jobs,
        cache_dir=None if no_cache else cache_directory(map(Path, paths)),
        opt_in=tuple(opt_in or ()),
        context=context.resolve() if context else None,
    )
    inputs = RunInputs.of(options)
    result = inputs.known_result()
    if result is None:
        result = _computed(options, inputs, progress=output_format is OutputFormat.text)
    _print_result(result, output_format, include_cold)
    code = result.exit_code(include_cold)
    if in_place is not None:
        from bot.verify.checkout.repo_checks import failing_checks_lines, repo_checks_lines

        checked = in_place.after_writing()
        print("\n".join([*repo_checks_lines(checked), *failing_checks_lines(checked)]), file=sys.stderr)
        code = max(code, 1) if checked.broken else code
        for line in in_place.turned_on_lines(result.changes):
            print(line, file=sys.stderr)
    raise typer.Exit(code)


def _computed(options: RunOptions, inputs: RunInputs, progress: bool) -> RunResult:
    """The engine's result, with a progress bar on a terminal; an interrupt ends the process in one line."""
    # Here, not at the top: a check whose result is known (a warm one, the pre-commit hook's) imports no engine.
    from codemods.engine.entry import run as run_engine

    try:
        with _progress(enabled=progress) as update:
            return run_engine(options, update, inputs)
    except RunInterrupted as interrupted:
        print(f"codemod: {interrupted}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        # The run has ended (nothing written, or the commit finished). Not `typer.Exit`: the interpreter's own
        # shutdown joins the process pool's manager thread, which the interrupt left mid-teardown, and could
        # print a traceback after the one line (seen once in three Ctrl-C runs).
        os._exit(130)


def _repo_checks_before(paths: tuple[Path, ...]):  # -> bot.verify.checkout.repo_checks.InPlaceChecks
    """The checkout's checks run before the write, in its own environment (built on first use)."""
    from codemod_cli.extras import require_extras

    require_extras("run --check-repo", "verify")
    from bot.verify.checkout.environment import EnvironmentFailed, environment_for
    from bot.verify.checkout.repo_checks import InPlaceChecks, checkout_above
    from bot.verify.checkout.requirements import is_checkout

    try:
        checkout = checkout_above(paths)
        print(f"check-repo: running {checkout}'s own checks before writing", file=sys.stderr, flush=True)
        # A checkout that declares no dependencies has nothing to install: this interpreter runs its checks.
        python = environment_for(checkout) if is_checkout(checkout) else Path(sys.executable)
        return InPlaceChecks.before_writing(paths, python)
    except (ValueError, EnvironmentFailed) as error:
        raise UsageError(str(error)) from None


def _print_result(result, output_format: OutputFormat, include_cold: bool) -> None:
    from codemods.output import report
    if output_format is OutputFormat.json:
        print(report.as_json(result, include_cold))
    elif output_format is OutputFormat.sarif:
        from codemods.output.sarif import as_sarif

        print(as_sarif(result, include_cold))
    elif output_format is OutputFormat.github:
        text = report.as_github(result, include_cold)
        if text:
            print(text)
    else:
        from codemods.engine.run_result import Mode

        # With --diff, stdout is the patch alone (`> fixes.patch`); what the run found goes to stderr.
        findings_stream = sys.stdout
        if result.mode is Mode.DIFF:
            sys.stdout.write(report.unified_diff(result))
            findings_stream = sys.stderr
        for line in report.text_lines(result, include_cold):
            print(line, file=findings_stream)
        for error in result.errors:
            where = f"{report.display_path(error.path)}{f':{error.line}' if error.line else ''}"
            print(f"{ERROR_PREFIX}{where}: {error.message}", file=sys.stderr)
        print(report.summary_line(result), file=sys.stderr)
        for note in report.summary_notes(result, include_cold):
            print(note, file=sys.stderr)


class _progress:
    """A rich progress bar on a terminal; nothing when stderr is not one (CI, pre-commit, pipes)."""

    def __init__(self, enabled: bool) -> None:
        self._enabled = enabled and sys.stderr.isatty()
        self._bar = None
        self._tasks: dict[str, int] = {}

    def __enter__(self):
        if not self._enabled:
            return None
        from rich.progress import Progress

        self._bar = Progress(transient=True, console=None)
        self._bar.start()
        return self.update

    def update(self, phase: str, done: int, total: int) -> None:
        if phase not in self._tasks:
            self._tasks[phase] = self._bar.add_task(phase, total=total)
        self._bar.update(self._tasks[phase], completed=done, total=total)

    def __exit__(self, *exc_info) -> None:
        if self._bar is not None:
            self._bar.stop()
