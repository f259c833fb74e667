"""`codemod`: the command line (typer). Exit codes: 0 nothing to report, 1 findings remain, 2 error.

The commands live in their own modules (`cli_run`, `cli_verify`; `codemod bot` in `codemod_cli.bot`); this one
registers them, in the order `codemod --help` lists them, and turns every error into one line. `verify` and `bot`
are built only when they run or a help lists them (`_Commands`).
"""

from __future__ import annotations

import gc
import sys
from typing import Annotated

import click
import typer
from typer.core import TyperGroup

from codemod_cli.run import ERROR_PREFIX, EXIT_CODES, run
from codemods.errors import RunAborted, UsageError
from codemods.project.config import ConfigError


class _Commands(TyperGroup):
    """The app's commands, `verify` and `bot` built only when they run or a help lists them: typer reads every
    command's signature on each start, and theirs (many options) took a tenth of a warm `codemod run --check`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), "verify", "bot"]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        # Their modules import only typer: torch, diffusers and PyGithub load when one of their commands runs.
        if name == "verify":
            from codemod_cli.verify import verify_app

            return typer.main.get_command(verify_app)
        if name == "bot":
            from codemod_cli.bot import bot_app

            return typer.main.get_command(bot_app)
        return super().get_command(ctx, name)


app = typer.Typer(
    name="codemod",
    cls=_Commands,
    help=f"Find and fix performance anti-patterns in diffusers.\n\n{EXIT_CODES}",
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _show_version(wanted: bool) -> None:
    if not wanted:
        return
    from codemods.tool_version import version_line

    print(version_line())
    raise typer.Exit(0)


@app.callback()
def _options(
    version: Annotated[
        bool, typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and the commit, and exit.")
    ] = False,
) -> None:
    # No docstring: typer would show it in place of the app's help. `--version` acts in its eager callback.
    pass


app.command(epilog=EXIT_CODES)(run)


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
    from codemods.output.rule_docs import explain_text

    print(explain_text(code), end="")


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
    # The process ends here. The interpreter's last collections would walk every object the command made, to
    # free none that matters to an ending process: a tenth of a second after a cold check of a diffusers
    # checkout has printed its report.
    gc.freeze()
    sys.exit(code or 0)


if __name__ == "__main__":
    main()
