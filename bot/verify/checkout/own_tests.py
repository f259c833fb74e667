"""diffusers' own tests as evidence: the fast tests that cover the changed files, run on both trees.

Each tree gets a checkout of its own (`src/` is the tree, `tests/` a copy of the checkout's),
so the tests' conftest, which puts `<checkout>/src` on sys.path, finds that tree and no other;
the tree is also first on PYTHONPATH. Both run at once (one core each) in the checkout's
environment with the Hub offline (a test that would download fails at once instead of waiting
on retries), `OMP_NUM_THREADS=1`, and `@slow` tests skipped as diffusers skips them by default.
Each is `python -m pytest -p codemod_own_tests_plugin ...` in its own session: forked by the verify
run's zygote, which has torch imported, where it runs the same interpreter with the same
process-start settings, else a fresh process (`running.zygote.start_child`). Both stop at the
time budget (each killed with its process group); only tests that finished on both sides are compared.

A test that passes on the original and fails on the rewritten tree breaks the change, and so
does one skipped on the original that the change turns on (a gated test: see `turned_on_tests`)
and that then fails; tests that already fail on the original are listed and not blamed on it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.verify.checkout import own_tests_plugin
from bot.verify.planning.covering_tests import CheckoutTests
from bot.verify.running.runner import inherited_environment
from bot.verify.running.zygote import ForkedChild, Zygote, start_child
from codemods.project.test_modules import CheckoutTestModules

if TYPE_CHECKING:
    from bot.verify.planning.changes import ChangeSet

DEFAULT_BUDGET_S = 150.0
"""Per run, both trees at once: with start-up, one fix group's tests stay within 3 minutes on 2 cores."""

ENVIRONMENT = {
    "OMP_NUM_THREADS": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
PYTEST_OPTIONS = ("--continue-on-collection-errors",)
CHECKOUT_CONFIG = ("pyproject.toml", "setup.cfg", "pytest.ini", "tox.ini", "conftest.py")
_PLUGIN = "codemod_own_tests_plugin"
SIDES = ("original", "rewritten")


@dataclass
class OwnTests:
    modules: list[str]  # test files, relative to the checkout, in the order they ran
    command: str  # what a maintainer runs from the checkout to see the same
    passed: int = 0  # passed on both trees
    skipped: int = 0  # skipped on both trees
    broken: list[dict[str, str]] = field(default_factory=list)  # passed before, fail after: test, message
    failing_before: list[dict[str, str]] = field(default_factory=list)  # fail on the original: test, after, message
    changed: list[dict[str, str]] = field(default_factory=list)  # any other outcome that differs: test, before, after
    not_run: int = 0  # collected but not finished on both trees: the budget ran out first
    seconds: float = 0.0
    budget_s: float = DEFAULT_BUDGET_S
    imported: dict[str, str | None] = field(default_factory=dict)  # tree -> the diffusers its tests imported
    error: str | None = None  # the tests could not be run or compared at all
    title: str = "diffusers' own tests"
    fixed: list[dict[str, str]] = field(default_factory=list)  # failed, and pass with the test edit: test, fix
    test_edits: dict[str, str] = field(default_factory=dict)  # checkout-relative test file -> its text with the fix

    @property
    def same(self) -> bool:
        return not self.broken and not self.changed and self.error is None

    def line(self) -> str:
        if self.error:
            return f"{self.title}: not compared ({self.error})"
        if not self.modules:
            return f"{self.title}: no test module covers the changed files"
        text = f"{self.title}: {self.passed} passed, {self.skipped} skipped"
        if self.same:
            text += " (same before and after)"
        else:
            text += f"; {len(self.broken)} broken by the change, {len(self.changed)} other difference(s)"
        if self.failing_before:
            text += f"; {len(self.failing_before)} already failing before the change (not counted)"
        if self.fixed:
            text += f"; {len(self.fixed)} pass with the test edit the change carries"
        if self.not_run:
            text += f"; {self.not_run} not finished on both trees within {self.budget_s:.0f} s"
        return text

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OwnTests:
        return cls(**data)


def command_for(modules: list[str]) -> str:
    variables = " ".join(f"{key}={value}" for key, value in ENVIRONMENT.items() if key != "TOKENIZERS_PARALLELISM")
    return f"{variables} python -m pytest {shlex.join([*PYTEST_OPTIONS, *modules])}"


def changed_files_tests(
    tests: CheckoutTestModules | None,
    src: Path,
    changes: ChangeSet,
    work_dir: Path,
    python: Path | None = None,
    budget_s: float = DEFAULT_BUDGET_S,
    say: Callable[[str], None] = lambda message: None,
    zygote: Zygote | None = None,
) -> OwnTests | None:
    """The checkout's `tests` that cover the files `changes` rewrote in `src`, run on both trees (forked by `zygote`
    where it serves them); None without any."""
    if tests is None:
        return None
    modules = CheckoutTests(tests).covering(src, changes.changed_files)
    say(f"running diffusers' own tests on both trees: {len(modules)} module(s), at most {budget_s:.0f} s")
    trees = {"original": changes.original, "rewritten": changes.rewritten}
    python = Path(python or sys.executable)
    result = run_own_tests(python, tests.tests_dir.parent, trees, modules, work_dir, budget_s, zygote=zygote)
    say(result.line())
    return result


def run_own_tests(
    python: Path,
    checkout: Path,
    trees: dict[str, Path],
    modules: list[str],
    work_dir: Path,
    budget_s: float = DEFAULT_BUDGET_S,
    lift: list[str] | None = None,
    zygote: Zygote | None = None,
) -> OwnTests:
    """Run `modules` (paths or node ids relative to `checkout`) against each tree (`SIDES` -> package
    directory), both at once, each forked by `zygote` where it serves it (`start_child`); `lift`: test names run
    despite their "needs an accelerator" skip."""
    result = OwnTests(modules=list(modules), command=command_for(modules), budget_s=budget_s)
    if not modules:
        return result
    started = time.monotonic()
    shutil.rmtree(work_dir, ignore_errors=True)
    plugin_dir = work_dir / "plugin"
    plugin_dir.mkdir(parents=True)
    shutil.copyfile(own_tests_plugin.__file__, plugin_dir / f"{_PLUGIN}.py")
    runs = {
        side: _start(python, checkout, trees[side], modules, work_dir / side, plugin_dir, lift, zygote)
        for side in SIDES
    }
    outcomes: dict[str, dict[str, dict[str, str]]] = {}
    collected: set[str] = set()
    for side, (process, out_file, log_file) in runs.items():
        stopped = _wait(process, started + budget_s)
        outcomes[side], result.imported[side], side_collected = _read(out_file)
        collected |= side_collected
        if not outcomes[side] and not stopped and process.returncode not in (0, 1):
            result.error = f"pytest exited with {process.returncode} on the {side} tree: {_tail(log_file)}"
    result.seconds = round(time.monotonic() - started, 1)
    for side in SIDES:
        expected = (work_dir / side / "src" / trees[side].name / "__init__.py").resolve()
        imported = result.imported.get(side)
        if result.error is None and imported is not None and Path(imported).resolve() != expected:
            result.error = f"the {side} tree's tests imported diffusers from {imported}, not from the tree"
    if result.error is None:
        _compare(result, outcomes["original"], outcomes["rewritten"])
        finished = set(outcomes["original"]) & set(outcomes["rewritten"])
        result.not_run = len((collected | set(outcomes["original"]) | set(outcomes["rewritten"])) - finished)
    return result


def checkout_of(tree: Path, checkout: Path, directory: Path) -> Path:
    """`directory` made a checkout of `tree` (a package directory) alone: `src/<package>` is the tree,
    and the checkout's tests and test configuration are copied beside it, so the tests import the tree."""
    (directory / "src").mkdir(parents=True)
    (directory / "src" / tree.name).symlink_to(tree.resolve(), target_is_directory=True)
    shutil.copytree(checkout / "tests", directory / "tests", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in CHECKOUT_CONFIG:
        if (checkout / name).is_file():
            shutil.copyfile(checkout / name, directory / name)
    return directory


def _start(
    python: Path,
    checkout: Path,
    tree: Path,
    modules: list[str],
    side_dir: Path,
    plugin_dir: Path,
    lift: list[str] | None = None,
    zygote: Zygote | None = None,
) -> tuple[subprocess.Popen | ForkedChild, Path, Path]:
    """A checkout of `tree` alone (see `checkout_of`) and pytest started in it."""
    checkout_of(tree, checkout, side_dir)
    out_file, log_file = side_dir / "outcomes.jsonl", side_dir / "pytest.log"
    environment = inherited_environment()  # the tests build models one after another, as targets do
    environment.update(ENVIRONMENT)
    environment["PYTHONPATH"] = os.pathsep.join([str(side_dir / "src"), str(plugin_dir)])
    environment["CODEMOD_OWN_TESTS_OUT"] = str(out_file)
    environment["CODEMOD_OWN_TESTS_LIFT"] = ",".join(lift or [])
    command = ["pytest", "-p", _PLUGIN, "-p", "no:cacheprovider", "-q", *PYTEST_OPTIONS, *modules]
    return start_child(python, command, side_dir, log_file, environment, zygote), out_file, log_file


def _wait(process: subprocess.Popen | ForkedChild, deadline: float) -> bool:
    """Wait for pytest until the deadline; True when it had to be stopped."""
    try:
        process.wait(timeout=max(0.0, deadline - time.monotonic()))
        return False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return True


def _read(out_file: Path) -> tuple[dict[str, dict[str, str]], str | None, set[str]]:
    """The plugin's record: outcome per test, the diffusers imported, the tests collected."""
    outcomes, imported, collected = {}, None, set()
    if out_file.is_file():
        for line in out_file.read_text("utf-8").splitlines():
            record = json.loads(line)
            if "diffusers" in record:
                imported = record["diffusers"]
            elif "collected" in record:
                collected.update(record["collected"])
            else:
                outcomes[record["nodeid"]] = {"outcome": record["outcome"], "message": record["message"]}
    return outcomes, imported, collected


def _compare(result: OwnTests, before: dict[str, dict[str, str]], after: dict[str, dict[str, str]]) -> None:
    for test in sorted(set(before) & set(after)):
        was, now = before[test]["outcome"], after[test]["outcome"]
        if was in ("failed", "error"):
            result.failing_before.append({"test": test, "after": now, "message": _clip(before[test]["message"])})
        elif was == now:
            result.passed += was == "passed"
            result.skipped += was == "skipped"
        elif was in ("passed", "skipped") and now in ("failed", "error"):
            result.broken.append({"test": test, "before": was, "message": _clip(after[test]["message"])})
        else:
            result.changed.append({"test": test, "before": was, "after": now})


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tail(log_file: Path, lines: int = 3) -> str:
    kept = [line for line in log_file.read_text("utf-8", errors="replace").splitlines() if line.strip()][-lines:]
    return " | ".join(kept)[-500:] or "(no output)"
