"""The checkout's own repository checks (`make quality`, repository consistency) on both trees.

Each tree gets a checkout of its own: the checkout's files (utils/, tests/, docs/, Makefile,
setup.py, ...) copied, and `src/` a link to the tree, so `python utils/check_copies.py` run from
its root reads exactly that tree. A check runs as CI runs it: from the checkout root, with the
Makefile's exported variables (`PYTHONPATH=src`), in the checkout's environment, with the
checkout's pinned ruff first on PATH (`codemods.project.tool_env`); a command the environment lacks
(`doc-builder`, an optional quality tool) is "not run", said with the reason.

A check that passes on the original and fails on the rewritten tree is the change's fault: its
output goes into the report and the change is not proposed. A check that already fails on the
original is listed as such and blamed on nobody.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bot.verify.checkout.check_outcomes import OriginalOutcomes, Outcome
from bot.verify.checkout.check_scope import ChangedFiles, ScopedCheck, scoped_checks
from bot.verify.checkout.repo_check_list import RepoCheck, read_makefile, repo_checks
from bot.verify.checkout.turned_on_tests import turned_on_in_checkout
from bot.verify.running.runner import inherited_environment
from codemods.edits.formatter import find_pin
from codemods.project.tool_env import ToolUnavailable, installed_tool

CHECK_TIMEOUT_S = 600.0
_NOT_FOUND = 127  # the shell's "command not found"
_OUTPUT_LINES = 40
_SKIPPED_IN_COPY = shutil.ignore_patterns(".git", "__pycache__", "*.pyc")
SIDES = ("original", "rewritten")
NOT_AFFECTED = "not affected"
NOT_RERUN = "not rerun"  # after: it fails on the original tree already, so the change cannot break it


@dataclass
class CheckResult:
    name: str
    source: str
    before: str  # "passed", "failed", "not run", or NOT_AFFECTED (the change cannot affect it: not run)
    # after: the same, or NOT_RERUN
    after: str
    output: str = ""  # the failing side's last lines (the rewritten tree's when it broke there)
    why: str = ""  # why it ran (on which files), or why the change cannot affect it

    @property
    def broken(self) -> bool:
        return self.before == "passed" and self.after == "failed"


@dataclass
class RepoChecks:
    checks: list[CheckResult] = field(default_factory=list)
    ruff: str | None = None  # the pinned ruff the checks ran with
    error: str | None = None  # the checks could not be run at all

    @property
    def broken(self) -> list[CheckResult]:
        return [check for check in self.checks if check.broken]

    def line(self, name_failing: bool = True) -> str:
        """One line: how many ran, what the change broke; `name_failing`: also the checks failing before it."""
        if self.error:
            return f"repository checks: not run ({self.error})"
        if not self.checks:
            return "repository checks: none found in the Makefile or the workflows"
        affected = [c for c in self.checks if c.before != NOT_AFFECTED]
        ran = [c for c in affected if "not run" not in (c.before, c.after)]
        text = f"repository checks: {len(ran)} run"
        if self.broken:
            text += f", {len(self.broken)} broken by the change ({', '.join(c.name for c in self.broken)})"
        else:
            text += ", none broken by the change"
        if name_failing and self.failing_before:
            names = ", ".join(c.name for c in self.failing_before)
            text += f"; {len(self.failing_before)} already failing before it ({names})"
        skipped = [c for c in affected if c not in ran]
        if skipped:
            text += f"; not run: {', '.join(c.name for c in skipped)}"
        if len(affected) < len(self.checks):
            text += f"; {len(self.checks) - len(affected)} the changed files cannot affect"
        return text

    @property
    def failing_before(self) -> list[CheckResult]:
        return [c for c in self.checks if c.before == "failed"]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RepoChecks:
        return cls([CheckResult(**check) for check in data.get("checks", [])], data.get("ruff"), data.get("error"))


def repo_checks_lines(result: RepoChecks) -> list[str]:
    """The checks' line for a report, each broken check with its output, why each check ran and why the
    others could not be affected (the checks failing before the change: `failing_checks_lines`)."""
    lines = [f"{'❌' if result.broken else '✅'} {result.line(name_failing=False)}"]
    for check in result.broken:
        lines += ["", f"`{check.name}` ({check.source}) passes on the original tree and fails on the rewritten one:"]
        lines += ["", "```", check.output, "```"]
    ran = [f"- `{c.name}`: {c.why}" for c in result.checks if c.before != NOT_AFFECTED and c.why]
    unaffected = [f"- `{c.name}`: {c.why}" for c in result.checks if c.before == NOT_AFFECTED]
    if unaffected:
        title = f"Which checks ran, and why {len(unaffected)} could not be affected by the changed files"
        lines += ["", f"<details><summary>{title}</summary>", "", *ran, *unaffected, "", "</details>"]
    return lines


def failing_checks_lines(result: RepoChecks) -> list[str]:
    """The checks that fail on the original tree already: named once, blamed on the checkout, not the change."""
    failing = result.failing_before
    if not failing:
        return []
    names = ", ".join(f"`{c.name}`" for c in failing)
    return [
        f"- {len(failing)} repository check(s) fail on the original tree too (the checkout's, not the change's): {names}"
    ]


def checkout_checks(
    checkout: Path,
    trees: dict[str, Path],
    work_dir: Path,
    python: Path | None = None,
    say: Callable[[str], None] = lambda message: None,
    changed: list[str] | None = None,
) -> RepoChecks:
    """The checkout's checks on each tree (`SIDES` -> package directory), compared; with `changed` (the
    changed files, relative to the package), only those the change can affect, narrowed to it."""
    checks = repo_checks(checkout)
    if not checks:
        return RepoChecks()
    if changed is None:
        scoped = [ScopedCheck(check, True, "") for check in checks]
    else:
        scoped = scoped_checks(checks, ChangedFiles(checkout, trees, changed), checkout)
    running = [s.check for s in scoped if s.runs]
    say(f"running {len(running)} of the checkout's {len(checks)} repository check(s) on both trees")
    shutil.rmtree(work_dir, ignore_errors=True)
    python = Path(python or sys.executable)
    environment, ruff = check_environment(checkout, python)
    known = OriginalOutcomes(checkout, trees["original"], python, ruff)
    # A check known to fail on the original tree cannot be broken by the change: not rerun on the rewritten one.
    failing = {c for c in running if (outcome := known.get(c)) is not None and outcome[0] == "failed"}
    to_run = {
        "original": [c for c in running if known.get(c) is None],
        "rewritten": [c for c in running if c not in failing],
    }
    sides = [side for side in SIDES if to_run[side]]
    roots = {side: _checkout_of(checkout, trees[side], work_dir / side) for side in sides}
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = dict(zip(sides, pool.map(lambda side: run_checks(to_run[side], roots[side], environment), sides)))
    for check, outcome in zip(to_run["original"], outcomes.get("original", [])):
        known.put(check, outcome)
    after = {**dict.fromkeys(failing, (NOT_RERUN, "")), **dict(zip(to_run["rewritten"], outcomes.get("rewritten", [])))}
    result = RepoChecks(
        [_compared(s.check, known.get(s.check), after[s.check], s.why) if s.runs else _unaffected(s) for s in scoped],
        ruff,
    )
    say(result.line())
    return result


def run_checks(checks: list[RepoCheck], root: Path, environment: dict[str, str]) -> list[tuple[str, str]]:
    """Each check's (outcome, output) run from the checkout at `root`, in order."""
    return [run_check(check, root, environment) for check in checks]


def compared(
    checks: list[RepoCheck], before: list[tuple[str, str]], after: list[tuple[str, str]], ruff: str | None
) -> RepoChecks:
    """The checks' outcomes on the original (`before`) and the rewritten tree (`after`), side by side."""
    return RepoChecks([_compared(*row) for row in zip(checks, before, after, strict=True)], ruff)


def check_environment(checkout: Path, python: Path) -> tuple[dict[str, str], str | None]:
    """What a check runs in: the checkout's environment first on PATH (its pinned ruff before it),
    the Makefile's exports, the Hub offline. Also the pinned ruff's name, or None."""
    environment = inherited_environment()
    environment.update(read_makefile(checkout / "Makefile").exported)
    environment.update({"HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    path = [str(python.parent)]
    pin, ruff = find_pin(checkout / "pyproject.toml"), None
    if pin is not None:
        try:
            path.insert(0, str(installed_tool("ruff", pin.version).parent))
            ruff = pin.name
        except ToolUnavailable:
            pass  # then whatever ruff the environment has, as CI without the pin would
    environment["PATH"] = os.pathsep.join([*path, environment.get("PATH", "")])
    return environment, ruff


def run_check(check: RepoCheck, root: Path, environment: dict[str, str]) -> tuple[str, str]:
    """("passed" | "failed" | "not run", the output's last lines) of `check` run from `root`."""
    script = "set -e\n" + "\n".join(check.lines) + "\n"
    try:
        done = subprocess.run(
            ["bash", "-c", script],
            check=False,
            cwd=root,
            env=environment,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=CHECK_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return "failed", f"did not finish within {CHECK_TIMEOUT_S:.0f} s"
    output = "\n".join((done.stdout + done.stderr).strip().splitlines()[-_OUTPUT_LINES:])
    if done.returncode == _NOT_FOUND and "command not found" in done.stderr:
        return "not run", output.splitlines()[-1] if output else "command not found"
    return ("passed" if done.returncode == 0 else "failed"), output


def _compared(check: RepoCheck, before: Outcome, after: Outcome, why: str = "") -> CheckResult:
    output = after[1] if after[0] == "failed" else before[1] if before[0] != "passed" else ""
    return CheckResult(check.name, check.source, before[0], after[0], output, why)


def _unaffected(scoped: ScopedCheck) -> CheckResult:
    return CheckResult(scoped.check.name, scoped.check.source, NOT_AFFECTED, NOT_AFFECTED, why=scoped.why)


def _checkout_of(checkout: Path, tree: Path, root: Path) -> Path:
    """A checkout at `root` whose `src/<package>` is `tree` (copied: some checks write, as `make` would)."""
    shutil.copytree(checkout, root, ignore=_outside_src(checkout))
    shutil.copytree(tree, root / "src" / tree.name, ignore=_SKIPPED_IN_COPY)
    return root


def _outside_src(checkout: Path) -> Callable[[str, list[str]], set[str]]:
    def ignored(directory: str, names: list[str]) -> set[str]:
        skipped = set(_SKIPPED_IN_COPY(directory, names))
        if Path(directory) == checkout:
            skipped.add("src")
        return skipped

    return ignored


@dataclass
class InPlaceChecks:
    """`codemod run --check-repo`: the checks run on the user's checkout itself, before and after the write.

    Nothing is copied and nothing is stashed: the same tree is checked, written, checked again.
    """

    checkout: Path
    checks: list[RepoCheck]
    environment: dict[str, str]
    ruff: str | None
    before: list[tuple[str, str]]

    @classmethod
    def before_writing(cls, paths: tuple[Path, ...], python: Path) -> InPlaceChecks:
        checkout = checkout_above(paths)
        checks = repo_checks(checkout)
        environment, ruff = check_environment(checkout, python)
        return cls(checkout, checks, environment, ruff, run_checks(checks, checkout, environment))

    def after_writing(self) -> RepoChecks:
        return compared(self.checks, self.before, run_checks(self.checks, self.checkout, self.environment), self.ruff)

    def turned_on_lines(self, changes: dict[str, tuple[str, str]]) -> list[str]:
        """The checkout's tests the written changes turn on: what `codemod verify` runs, and carries fixes for."""
        node_ids = turned_on_in_checkout(self.checkout, changes)
        if not node_ids:
            return []
        return [
            f"check-repo: the changes turn on {len(node_ids)} test(s) that were skipped before; `codemod verify` runs "
            "them on the CPU and carries the test edits they need:",
            *(f"  {node_id}" for node_id in node_ids),
        ]


def checkout_above(paths: tuple[Path, ...]) -> Path:
    """The checkout holding `paths`: the nearest folder above the first with a `src/` and a Makefile or workflows."""
    start = paths[0].resolve() if paths else Path.cwd()
    for folder in [start, *start.parents]:
        has_checks = (folder / "Makefile").is_file() or (folder / ".github" / "workflows").is_dir()
        if (folder / "src").is_dir() and has_checks:
            return folder
    raise ValueError(
        f"{paths[0] if paths else '.'}: no checkout above it (a folder with src/ and a Makefile or "
        ".github/workflows/); --check-repo needs the repository's own checks"
    )
