"""`verify()`: rewrite a copy of a diffusers tree, run both copies' targets, judge every change.

The phases in order: the rewrite, the checkout's environment (when `interpreter` builds it), the
targets (`target_runs`), real scale, the checkout's own tests, its repository checks; each phase's seconds go into the report. This process never imports diffusers
(each tree is imported by its own worker only); it imports torch just to compare the two sides'
saved outputs (`target_result`).
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import nullcontext
from importlib import metadata
from pathlib import Path

from bot.verify.checkout.environment import checkout_of
from bot.verify.checkout.own_tests import DEFAULT_BUDGET_S, changed_files_tests
from bot.verify.checkout.repo_checks import checkout_checks
from bot.verify.checkout.turned_on_tests import turned_on_tests
from bot.verify.planning.changes import rewrite_copy, why_nothing_changed
from bot.verify.real_scale.run import real_scale_section
from bot.verify.reporting.report import VerifyReport
from bot.verify.running.runner import worker_zygote
from bot.verify.running.zygote import Zygote, forks_on
from bot.verify.target_runs import verify_changes
from codemods.project.test_modules import checkout_tests_of

DEVICES = ("emu", "cuda", "cpu")


def verify(
    src: Path,
    *,
    select: tuple[str, ...] | None = None,
    paths: tuple[Path, ...] | None = None,
    device: str = "emu",
    work_dir: Path | None = None,
    compile: bool = False,
    tolerance: float = 1e-4,
    progress: Callable[[str], None] | None = None,
    python: Path | None = None,
    interpreter: Callable[[], Path | None] | None = None,
    own_tests: bool = True,
    tests_budget_s: float = DEFAULT_BUDGET_S,
    scale: str = "test",
    repo_checks: bool = True,
    cache_dir: Path | None = None,
    zygote: Zygote | None = None,
    original: Path | None = None,
) -> VerifyReport:
    """Verify every change the engine makes to `src` (a diffusers package directory).

    `python` runs both trees (default: this interpreter); `interpreter`, if given, is asked for it
    once there is a change to verify (building the checkout's environment takes minutes, and a
    run with nothing to verify says why without it). In a checkout with `tests/`,
    `own_tests` also runs the checkout's tests that cover the changed files on both trees, and
    `repo_checks` the checks its Makefile and CI run (`make quality`, repository consistency).
    `cache_dir` is a scan cache the rewrite may reuse and add to (the bot's, shared by its planning run and
    every group's verification: copies of one tree share their scans).
    `zygote` forks the run's children where it serves them (a caller's that verifies several times: the bot's run,
    shared by its groups; it serves its own interpreter and start-time environment alone, the others start fresh
    processes); without one, the run starts its own for `python` and stops it at its end.
    `original` is a copy of `src` that several runs share as their original tree (`rewrite_copy`).
    """
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, not {device!r}")
    src = Path(src)
    if not (src / "__init__.py").is_file():
        raise ValueError(f"{src} is not a package directory (expected …/diffusers with an __init__.py)")
    say = progress or (lambda message: None)
    started = time.monotonic()
    keep = work_dir is not None
    root = Path(work_dir) if keep else Path(tempfile.mkdtemp(prefix="codemod-verify-"))
    root.mkdir(parents=True, exist_ok=True)
    phases: dict[str, float] = {}
    # Every phase that reads the checkout's tests (targets, covering tests, turned-on tests) shares one reading.
    checkout_tests = checkout_tests_of(src)

    def lap(phase: str) -> None:
        phases[phase] = time.monotonic() - started - sum(phases.values())

    try:
        say(f"rewriting a copy of {src}")
        changes = rewrite_copy(src, root, select=select, paths=paths, cache_dir=cache_dir, original=original)
        lap("rewrite")
        say(f"{len(changes.rewrites)} rewrite(s) in {len(changes.changed_files)} file(s)")
        results, tests, real, turned_on, checks, nothing = [], None, None, None, None, None
        if not changes.rewrites:
            nothing = why_nothing_changed(changes.result, select, paths is not None)
            say(f"nothing to verify: {nothing}")
        else:
            if interpreter is not None:
                python = interpreter()
                lap("environment")
            # One zygote forks both trees' workers and the checkout's own tests (torch imported once): the caller's,
            # else the run's own, started by the first of them and stopped once they are done, or on an interrupt,
            # with any child still running.
            zygote_of_run = nullcontext(zygote) if zygote is not None else worker_zygote(python, root / "zygote.txt")
            with zygote_of_run as zygote:
                results = verify_changes(checkout_tests, changes, root, device, compile, tolerance, say, python, zygote)
                lap("targets")
                if scale == "real":
                    real = real_scale_section(changes, device, root / "real-scale", python, say)
                    lap("real scale")
                if own_tests:
                    forked = zygote if forks_on(device) else None
                    tests = changed_files_tests(
                        checkout_tests, src, changes, root / "own-tests", python, tests_budget_s, say, forked
                    )
                    turned_on = turned_on_tests(
                        checkout_tests, changes, root / "turned-on-tests", python, tests_budget_s, say, forked
                    )
                    lap("own tests")
            checkout = checkout_of(src)
            if repo_checks and checkout is not None:
                trees = {"original": changes.original, "rewritten": changes.rewritten}
                checks = checkout_checks(checkout, trees, root / "repo-checks", python, say, changes.changed_files)
                lap("repo checks")
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    return VerifyReport(
        src=str(src),
        device=device,
        select=list(select) if select else None,
        versions=_versions(src),
        changed_files=changes.changed_files,
        targets=results,
        seconds=time.monotonic() - started,
        errors=[str(error) for error in changes.result.errors],
        tolerance=tolerance,
        compile=compile,
        own_tests=tests,
        interpreter=str(python or sys.executable),
        rewrites={r.where: list(r.rules) for r in changes.rewrites},
        phases=phases,
        real_scale=real,
        repo_checks=checks,
        turned_on_tests=turned_on,
        nothing_to_verify=nothing,
    )


def _versions(src: Path) -> dict[str, str]:
    text = (src / "__init__.py").read_text("utf-8", errors="replace")
    match = re.search(r"^__version__\s*=\s*[\"']([^\"']+)[\"']", text, re.MULTILINE)
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = "not installed"
    return {"torch": torch_version, "diffusers": match.group(1) if match else "unknown"}
