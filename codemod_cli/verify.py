"""`codemod verify`: rewrite a copy of a diffusers tree and judge every change on both trees.

torch and diffusers load only once the command runs, inside `bot.verify`: defining it imports neither.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from codemod_cli.extras import require_extras
from codemod_cli.options import Compile, NoCache, Select
from codemod_cli.options import Python as PythonOption
from codemod_cli.options import TorchIndex as TorchIndexOption
from codemod_cli.run import rule_codes
from codemods.errors import UsageError
from codemods.project.tree_paths import inside_tree


class VerifyDevice(str, Enum):
    emu = "emu"
    cuda = "cuda"
    cpu = "cpu"


class VerifyScale(str, Enum):
    test = "test"
    real = "real"


VERIFY_EXIT_CODES = """\
Exit codes: 0 nothing regressed or failed (changes may be verified, no-gain or unverified);
1 a change regressed or failed; 2 an error (bad arguments, a tree that is not a package, torch or
another module of the `verify` extra not installed, an environment that cannot be built)."""


def verify(
    src: Annotated[Path, typer.Argument(metavar="SRC", help="A diffusers package directory (…/src/diffusers).")],
    select: Select = None,
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
    compile_: Compile = False,
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
    no_cache: NoCache = False,
) -> None:
    """Rewrite a copy of SRC, run each change's target on both trees, and report copies, syncs and parity."""
    _require_diffusers_root(src)  # before anything slow: a subpackage would run for minutes, then fail
    require_extras("verify", "verify")
    _require_cuda_for_real_scale(scale, device)
    import shlex

    from bot.verify import verify as run_verify  # torch and diffusers stay out of the static commands
    from bot.verify.checkout.environment import (
        EnvironmentFailed,
        TorchSource,
        checkout_of,
        interpreter_for,
        require_cuda,
    )
    from bot.verify.checkout.own_tests import DEFAULT_BUDGET_S
    from codemods.engine.cache import cache_directory

    def say(message: str) -> None:
        print(f"verify: {message}", file=sys.stderr, flush=True)

    def interpreter() -> Path | None:
        """What runs the trees, asked for only once there is a change to verify (the build takes minutes)."""
        chosen = interpreter_for(src, python, TorchSource(index_url=torch_index), say)
        if device is VerifyDevice.cuda:
            require_cuda(chosen)
        return chosen

    codes = rule_codes(select)
    reproduce = ["codemod", "verify", str(src), *(f"--select={code}" for code in codes or ())]
    reproduce += [f"--path={p}" for p in path or ()]
    reproduce += [f"--device={device.value}"] + (["--compile"] if compile_ else [])
    reproduce += ["--scale=real"] if scale is VerifyScale.real else []
    if tolerance != 1e-4:
        reproduce.append(f"--tolerance={tolerance:g}")
    inside = tuple(src.resolve() / inside_tree(src, given, "--path") for given in path or ())
    # An interpreter given, or this one, is checked before any work; the checkout's environment is
    # built only once there is a change to verify.
    deferred = python is None and checkout_of(src) is not None
    try:
        report = run_verify(
            src,
            select=codes,
            paths=inside or None,
            device=device.value,
            work_dir=work_dir,
            compile=compile_,
            tolerance=tolerance,
            progress=say,
            python=None if deferred else interpreter(),
            interpreter=interpreter if deferred else None,
            own_tests=own_tests,
            tests_budget_s=DEFAULT_BUDGET_S if tests_budget is None else tests_budget,
            scale=scale.value,
            repo_checks=repo_checks,
            # Where `codemod run` keeps its scans: the next verification of this tree reuses this one's.
            cache_dir=None if no_cache else cache_directory((src,)),
        )
    except EnvironmentFailed as error:
        raise UsageError(str(error)) from None
    markdown = report.to_markdown(shlex.join(reproduce))
    if json_file is not None:
        import json

        json_file.write_text(json.dumps(report.to_json(), indent=2) + "\n")
    if markdown_file is not None:
        markdown_file.write_text(markdown)
    if html_file is not None:
        from bot.verify.reporting.html_report import write_html

        write_html(report.to_json(), html_file)
    print(markdown)
    print(f"verify: {report.counts()} in {report.seconds:.0f} s", file=sys.stderr)
    raise typer.Exit(report.exit_code())


# `codemod verify`, as the app builds it when the command runs or a help lists it (codemod_cli/app.py).
verify_app = typer.Typer(add_completion=False, rich_markup_mode=None)
verify_app.command(epilog=VERIFY_EXIT_CODES)(verify)


def _require_diffusers_root(src: Path) -> None:
    """SRC is the diffusers package itself: a `diffusers` directory with an `__init__.py`, not inside another package."""
    package = src.resolve()
    if (
        package.name != "diffusers"
        or not (package / "__init__.py").is_file()
        or (package.parent / "__init__.py").is_file()
    ):
        raise UsageError(
            f"{src}: not a diffusers package root; SRC must be the `diffusers` package directory "
            "(`<checkout>/src/diffusers`, or an installed `.../site-packages/diffusers`), not a subpackage or a checkout"
        )


def _require_cuda_for_real_scale(scale: VerifyScale, device: VerifyDevice) -> None:
    """`--scale real` times each change on a GPU: with another device it would measure nothing."""
    if scale is VerifyScale.real and device is not VerifyDevice.cuda:
        raise UsageError(
            f"--scale real needs --device cuda (a CUDA GPU): it times each change at its model's released size, "
            f"which --device {device.value} cannot; drop --scale real for the {device.value} census"
        )
