"""`codemod`: the command line (typer). Exit codes: 0 nothing to report, 1 findings remain, 2 error."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import click
import typer

from codemods.config import ConfigError
from codemods.errors import RunAborted, UsageError
from codemods.tree_paths import inside_tree

# The one prefix of every error line, whether the run stopped (exit 2) or one file could not be handled.
ERROR_PREFIX = "codemod: error: "
EXIT_CODES = """\
Exit codes: 0 nothing left to report; 1 findings remain (with --diff/--check: there would be
changes/findings); 2 an error (bad arguments, a file that cannot be read or parsed, a rule that
failed on a file)."""

app = typer.Typer(
    name="codemod",
    help=f"Find and fix performance anti-patterns in diffusers.\n\n{EXIT_CODES}",
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _show_version(wanted: bool) -> None:
    if not wanted:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("diffusers-codemod")
    except PackageNotFoundError:  # run from a source tree that was never installed
        from codemods import __version__ as installed
    print(f"codemod {installed}")
    raise typer.Exit(0)


@app.callback()
def _options(
    version: Annotated[
        bool, typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    # No docstring: typer would show it in place of the app's help. `--version` acts in its eager callback.
    pass


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


def _codes(values: list[str] | None) -> tuple[str, ...] | None:
    if values is None:
        return None
    return tuple(code.strip() for value in values for code in value.split(",") if code.strip())


@app.command(epilog=EXIT_CODES)
def run(
    paths: Annotated[list[str], typer.Argument(metavar="PATH...", help="Files and directories (recursing into *.py).")],
    diff: Annotated[bool, typer.Option("--diff", help="Print a unified diff of the fixes; write nothing.")] = False,
    check: Annotated[bool, typer.Option("--check", help="List findings; write nothing.")] = False,
    unsafe_fixes: Annotated[bool, typer.Option("--unsafe-fixes", help="Also apply fixes that need verification.")] = False,
    select: Annotated[
        list[str] | None, typer.Option(metavar="CODES", help="Rule codes or prefixes (comma-separated or repeated).")
    ] = None,
    ignore: Annotated[list[str] | None, typer.Option(metavar="CODES", help="Rule codes or prefixes to leave out.")] = None,
    output_format: Annotated[OutputFormat, typer.Option("--format", help="text, json, sarif or github.")] = OutputFormat.text,
    jobs: Annotated[int, typer.Option(min=0, metavar="N", help="Worker processes (0: one per core).")] = 0,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the scan cache.")] = False,
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
    from codemods.cache import cache_directory
    from codemods.engine import Mode, RunOptions
    from codemods.engine import run as run_engine

    if diff and check:
        raise UsageError("--diff and --check cannot be used together")
    if "" in paths:  # Path("") would quietly mean the current directory
        raise UsageError("an empty string is not a path")
    if check_repo and (diff or check):
        raise UsageError("--check-repo checks what a run writes: not with --diff or --check")
    in_place = _repo_checks_before(tuple(map(Path, paths))) if check_repo else None
    options = RunOptions(
        paths=tuple(map(Path, paths)),
        # SARIF carries each fix's replacement text, so a read-only SARIF run computes (and proves) the fixes.
        mode=Mode.DIFF if diff or (check and output_format is OutputFormat.sarif) else Mode.CHECK if check else Mode.WRITE,
        unsafe_fixes=unsafe_fixes,
        select=_codes(select),
        ignore=_codes(ignore),
        jobs=jobs,
        cache_dir=None if no_cache else cache_directory(map(Path, paths)),
    )
    with _progress(enabled=output_format is OutputFormat.text) as progress:
        result = run_engine(options, progress)
    _print_result(result, output_format)
    code = result.exit_code()
    if in_place is not None:
        from bot.verify.repo_checks import repo_checks_lines

        checked = in_place.after_writing()
        print("\n".join(repo_checks_lines(checked)), file=sys.stderr)
        code = max(code, 1) if checked.broken else code
        for line in in_place.turned_on_lines(result.changes):
            print(line, file=sys.stderr)
    raise typer.Exit(code)


def _repo_checks_before(paths: tuple[Path, ...]):  # -> bot.verify.repo_checks.InPlaceChecks
    """The checkout's checks run before the write, in its own environment (built on first use)."""
    from bot.verify.environment import EnvironmentFailed, environment_for
    from bot.verify.repo_checks import InPlaceChecks, checkout_above
    from bot.verify.requirements import is_checkout

    try:
        checkout = checkout_above(paths)
        print(f"check-repo: running {checkout}'s own checks before writing", file=sys.stderr, flush=True)
        # A checkout that declares no dependencies has nothing to install: this interpreter runs its checks.
        python = environment_for(checkout) if is_checkout(checkout) else Path(sys.executable)
        return InPlaceChecks.before_writing(paths, python)
    except (ValueError, EnvironmentFailed) as error:
        raise UsageError(str(error)) from None


def _print_result(result, output_format: OutputFormat) -> None:
    from codemods import report

    if output_format is OutputFormat.json:
        print(report.as_json(result))
    elif output_format is OutputFormat.sarif:
        print(report.as_sarif(result))
    elif output_format is OutputFormat.github:
        text = report.as_github(result)
        if text:
            print(text)
    else:
        from codemods.engine import Mode

        # With --diff, stdout is the patch alone (`> fixes.patch`); what the run found goes to stderr.
        findings_stream = sys.stdout
        if result.mode is Mode.DIFF:
            sys.stdout.write(report.unified_diff(result))
            findings_stream = sys.stderr
        for line in report.text_lines(result):
            print(line, file=findings_stream)
        for error in result.errors:
            where = f"{report.display_path(error.path)}{f':{error.line}' if error.line else ''}"
            print(f"{ERROR_PREFIX}{where}: {error.message}", file=sys.stderr)
        print(report.summary_line(result), file=sys.stderr)
        for note in report.summary_notes(result):
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


# `codemod bot ...`: bot.cli imports only typer; PyGithub and torch load when a bot command runs.
from bot.cli import Python as PythonOption  # noqa: E402
from bot.cli import TorchIndex as TorchIndexOption  # noqa: E402
from bot.cli import bot_app  # noqa: E402

app.add_typer(bot_app)


@app.command()
def rules() -> None:
    """List every rule: code, name, fix safety, summary."""
    from rich.console import Console
    from rich.table import Table

    from codemods.rules import all_rules

    table = Table("code", "name", "fix", "summary", box=None)
    for rule in all_rules():
        table.add_row(rule.code, rule.name, rule.fix_label(), rule.summary)
    Console(width=max(120, Console().width)).print(table)


@app.command()
def explain(
    code: Annotated[str, typer.Argument(metavar="RULE", help="A rule code or name, e.g. DIF004 or output-attribute-access.")],
) -> None:
    """Print a rule's full documentation."""
    from codemods.rule_docs import explain_text

    print(explain_text(code), end="")


class VerifyDevice(str, Enum):
    emu = "emu"
    cuda = "cuda"
    cpu = "cpu"


class VerifyScale(str, Enum):
    test = "test"
    real = "real"


VERIFY_EXIT_CODES = """\
Exit codes: 0 nothing regressed or failed (changes may be verified, no-gain or unverified);
1 a change regressed or failed; 2 an error (bad arguments, a tree that is not a package)."""


@app.command(epilog=VERIFY_EXIT_CODES)
def verify(
    src: Annotated[Path, typer.Argument(metavar="SRC", help="A diffusers package directory (…/src/diffusers).")],
    select: Annotated[
        list[str] | None, typer.Option(metavar="CODES", help="Rule codes or prefixes (comma-separated or repeated).")
    ] = None,
    path: Annotated[
        list[Path] | None, typer.Option("--path", metavar="PATH", help="Only let the engine rewrite these files.")
    ] = None,
    device: Annotated[
        VerifyDevice, typer.Option(help="emu: emulated accelerator census; cuda: profiler census; cpu: parity only.")
    ] = VerifyDevice.emu,
    json_file: Annotated[Path | None, typer.Option("--json", metavar="FILE", help="Write the JSON report here.")] = None,
    markdown_file: Annotated[
        Path | None, typer.Option("--markdown", metavar="FILE", help="Write the PR-body Markdown here.")
    ] = None,
    html_file: Annotated[
        Path | None,
        typer.Option("--html", metavar="FILE", help="Write the census as one self-contained, sortable HTML page."),
    ] = None,
    compile_: Annotated[
        bool, typer.Option("--compile", help="Also try torch.compile(fullgraph=True) checks (slow on CPU).")
    ] = False,
    tolerance: Annotated[float, typer.Option(min=0.0, help="Max abs diff allowed where bit-identity is not required.")] = 1e-4,
    work_dir: Annotated[
        Path | None, typer.Option("--work-dir", metavar="DIR", help="Keep the trees, traces and outputs here.")
    ] = None,
    python: PythonOption = None,
    torch_index: TorchIndexOption = None,
    own_tests: Annotated[
        bool, typer.Option("--tests/--no-tests", help="Also run the checkout's own tests of the changed files.")
    ] = True,
    tests_budget: Annotated[
        float | None,
        typer.Option(min=1.0, metavar="SECONDS", help="Time for the checkout's own tests (both trees; default 150)."),
    ] = None,
    scale: Annotated[
        VerifyScale,
        typer.Option(help="real: also time each change at its model's released width on CUDA (docs/gpu-evidence.md)."),
    ] = VerifyScale.test,
    repo_checks: Annotated[
        bool, typer.Option("--repo-checks/--no-repo-checks", help="Also run the checkout's Makefile and CI checks.")
    ] = True,
) -> None:
    """Rewrite a copy of SRC, run each change's target on both trees, and report copies, syncs and parity."""
    _require_diffusers_root(src)  # before anything slow: a subpackage would run for minutes, then fail
    import shlex

    from bot.verify import verify as run_verify  # torch and diffusers stay out of the static commands
    from bot.verify.environment import EnvironmentFailed, TorchSource, interpreter_for
    from bot.verify.own_tests import DEFAULT_BUDGET_S

    def say(message: str) -> None:
        print(f"verify: {message}", file=sys.stderr, flush=True)

    try:
        interpreter = interpreter_for(src, python, TorchSource(index_url=torch_index), say)
    except EnvironmentFailed as error:
        raise UsageError(str(error)) from None
    codes = _codes(select)
    reproduce = ["codemod", "verify", str(src), *(f"--select={code}" for code in codes or ())]
    reproduce += [f"--path={p}" for p in path or ()]
    reproduce += [f"--device={device.value}"] + (["--compile"] if compile_ else [])
    reproduce += ["--scale=real"] if scale is VerifyScale.real else []
    if tolerance != 1e-4:
        reproduce.append(f"--tolerance={tolerance:g}")
    inside = tuple(src.resolve() / inside_tree(src, given, "--path") for given in path or ())
    report = run_verify(
        src,
        select=codes,
        paths=inside or None,
        device=device.value,
        work_dir=work_dir,
        compile=compile_,
        tolerance=tolerance,
        progress=say,
        python=interpreter,
        own_tests=own_tests,
        tests_budget_s=DEFAULT_BUDGET_S if tests_budget is None else tests_budget,
        scale=scale.value,
        repo_checks=repo_checks,
    )
    markdown = report.to_markdown(shlex.join(reproduce))
    if json_file is not None:
        import json

        json_file.write_text(json.dumps(report.to_json(), indent=2) + "\n")
    if markdown_file is not None:
        markdown_file.write_text(markdown)
    if html_file is not None:
        from bot.verify.html_report import write_html

        write_html(report.to_json(), html_file)
    print(markdown)
    print(f"verify: {report.counts()} in {report.seconds:.0f} s", file=sys.stderr)
    raise typer.Exit(report.exit_code())


def _require_diffusers_root(src: Path) -> None:
    """SRC is the diffusers package itself: a `diffusers` directory with an `__init__.py`, not inside another package."""
    package = src.resolve()
    if package.name != "diffusers" or not (package / "__init__.py").is_file() or (package.parent / "__init__.py").is_file():
        raise UsageError(
            f"{src}: not a diffusers package root; SRC must be the `diffusers` package directory "
            "(`<checkout>/src/diffusers`, or an installed `.../site-packages/diffusers`), not a subpackage or a checkout"
        )


def main() -> None:
    """Entry point: every error is one line on stderr with exit code 2, never a traceback."""
    try:
        code = app(args=sys.argv[1:] or ["--help"], standalone_mode=False)
    except (UsageError, ConfigError, RunAborted) as error:
        print(f"{ERROR_PREFIX}{error}", file=sys.stderr)
        code = 2
    except click.exceptions.Exit as exit_:
        code = exit_.exit_code
    except click.exceptions.Abort:
        print("codemod: interrupted", file=sys.stderr)
        code = 130
    except click.exceptions.ClickException as error:  # usage errors: bad options, missing arguments
        print(f"{ERROR_PREFIX}{error.format_message()}", file=sys.stderr)
        code = 2
    sys.exit(code or 0)


if __name__ == "__main__":
    main()
