"""A checkout's own tests run on both trees: what the change broke is blamed on it, what failed before is not.

The checkout is a tiny package of our own named `diffusers` with a diffusers-style `tests/`
(its conftest puts `<checkout>/src` on sys.path, as diffusers' does); the rewritten tree
breaks one function on purpose.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from processes import alive

from bot.verify.checkout.own_tests import SIDES, OwnTests, run_own_tests
from bot.verify.reporting.report import VerifyReport
from bot.verify.running.zygote import Zygote

OPS = """\
def add(a, b):
    return a + b


def scale(x, factor):
    return x * factor
"""

TESTS = """\
import os
import subprocess
import time
import unittest

from diffusers.ops import add, scale


class OpsFastTests(unittest.TestCase):
    def test_add(self):
        assert add(2, 3) == 5

    def test_scale(self):
        assert scale(3, 2) == 6

    def test_add_strings(self):
        assert add("a", 1) == "a1"

    @unittest.skip("test is slow")
    def test_scale_large(self):
        assert scale(10**6, 10**6) == 10**12


class OpsSlowTests(unittest.TestCase):
    def test_wait(self):
        sleeper = subprocess.Popen(["sleep", "600"])
        with open("pids.json", "w") as pids:
            pids.write(f"[{os.getpid()}, {sleeper.pid}]")
        time.sleep(60)
"""

CONFTEST = """\
import json
import os
import sys
from os.path import abspath, dirname, join

sys.path.insert(1, abspath(join(dirname(dirname(__file__)), "src")))
hub = ("huggingface_hub", "transformers", "datasets")
json.dump({
    "parent": os.getppid(),
    "torch_dynamo_imported": "torch._dynamo" in sys.modules,
    "hub_imported": any(name.split(".")[0] in hub for name in sys.modules),
}, open("start.json", "w"))
"""

MODULE = "tests/models/test_ops.py"


def _checkout(root: Path) -> Path:
    (root / "src" / "diffusers").mkdir(parents=True)
    (root / "src" / "diffusers" / "__init__.py").write_text("")
    (root / "src" / "diffusers" / "ops.py").write_text(OPS)
    (root / "tests" / "models").mkdir(parents=True)
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "models" / "__init__.py").write_text("")
    (root / "tests" / "conftest.py").write_text(CONFTEST)
    (root / MODULE).write_text(TESTS)
    return root


def _trees(checkout: Path, work: Path) -> dict[str, Path]:
    trees = {}
    for side in ("original", "rewritten"):
        trees[side] = work / side / "diffusers"
        shutil.copytree(checkout / "src" / "diffusers", trees[side])
    ops = trees["rewritten"] / "ops.py"
    ops.write_text(ops.read_text().replace("return x * factor", "return x * factor - 1"))
    return trees


@pytest.fixture(scope="module")
def checkout_and_trees(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    root = tmp_path_factory.mktemp("own-tests")
    checkout = _checkout(root / "checkout")
    return checkout, _trees(checkout, root / "trees")


@pytest.fixture(scope="module")
def fresh_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fresh")


@pytest.fixture(scope="module")
def fresh_and_forked(
    checkout_and_trees, fresh_runs: Path, zygote: Zygote, tmp_path_factory: pytest.TempPathFactory
) -> tuple[OwnTests, OwnTests, Path]:
    """The tests run by fresh interpreters, and forked by a zygote running this interpreter (as a verify run's zygote
    forks them) into the runs directory returned: both at once, as each waits out its budget on the slow test."""
    checkout, trees = checkout_and_trees
    runs = tmp_path_factory.mktemp("forked")
    with ThreadPoolExecutor(1) as fresh_thread:
        fresh = fresh_thread.submit(
            run_own_tests, Path(sys.executable), checkout, trees, [MODULE], fresh_runs, budget_s=8
        )
        forked = run_own_tests(Path(sys.executable), checkout, trees, [MODULE], runs, budget_s=8, zygote=zygote)
        return fresh.result(), forked, runs


@pytest.fixture(scope="module")
def compared(checkout_and_trees, fresh_and_forked) -> tuple[OwnTests, dict[str, Path]]:
    """The tests run by fresh interpreters."""
    return fresh_and_forked[0], checkout_and_trees[1]


@pytest.fixture(scope="module")
def forked(fresh_and_forked) -> tuple[OwnTests, Path]:
    """The same tests forked by the zygote."""
    return fresh_and_forked[1:]


def test_a_test_that_passes_before_and_fails_after_is_broken_by_the_change(compared) -> None:
    result, _ = compared
    assert result.broken == [
        {
            "test": f"{MODULE}::OpsFastTests::test_scale",
            "before": "passed",
            "message": "assert 5 == 6 + where 5 = scale(3, 2)",
        }
    ]


def test_a_test_that_already_failed_before_is_listed_and_not_blamed(compared) -> None:
    result, _ = compared
    [failing] = result.failing_before
    assert (failing["test"], failing["after"]) == (f"{MODULE}::OpsFastTests::test_add_strings", "failed")
    assert failing["message"].startswith("TypeError: can only concatenate str")


def test_tests_that_agree_are_counted_and_the_line_says_what_broke(compared) -> None:
    result, _ = compared
    assert (result.passed, result.skipped, result.same) == (1, 1, False)
    assert result.line() == (
        "diffusers' own tests: 1 passed, 1 skipped; 1 broken by the change, 0 other difference(s); "
        "1 already failing before the change (not counted); 1 not finished on both trees within 8 s"
    )


def test_a_test_past_the_budget_is_stopped_and_counted_as_not_run(compared) -> None:
    result, _ = compared
    assert result.not_run == 1
    assert result.seconds < 20


def test_each_tree_runs_its_own_copy_of_the_package(compared) -> None:
    result, trees = compared
    for side, tree in trees.items():
        assert Path(result.imported[side]).resolve() == (tree / "__init__.py").resolve()


def test_the_command_is_what_a_maintainer_runs_from_the_checkout(compared) -> None:
    result, _ = compared
    assert result.command == (
        "OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 "
        f"python -m pytest --continue-on-collection-errors {MODULE}"
    )


def test_no_covering_module_runs_nothing(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path / "checkout")
    result = run_own_tests(Path(sys.executable), checkout, _trees(checkout, tmp_path / "trees"), [], tmp_path / "runs")
    assert (result.line(), result.imported) == ("diffusers' own tests: no test module covers the changed files", {})


def test_a_report_with_a_broken_test_fails_and_its_markdown_names_the_test(compared) -> None:
    result, _ = compared
    report = VerifyReport("src/diffusers", "emu", None, {}, ["ops.py"], [], own_tests=result)
    markdown = report.to_markdown("codemod verify src/diffusers")
    assert report.exit_code() == 1
    assert (
        f"- `{MODULE}::OpsFastTests::test_scale` passed before the change and fails after it: assert 5 == 6" in markdown
    )
    assert f"```\n{result.command}\n```" in markdown


def _started(runs: Path) -> list[dict[str, Any]]:
    """What each side's pytest saw when the checkout's conftest was imported."""
    return [json.loads((runs / side / "start.json").read_text()) for side in SIDES]


def _outcomes(result: OwnTests) -> dict[str, Any]:
    """All a run found: everything but its seconds, with the diffusers each side imported resolved."""
    imported = {side: Path(path).resolve() for side, path in result.imported.items() if path}
    return {**asdict(result), "seconds": None, "imported": imported}


def test_forked_tests_find_what_fresh_interpreters_find(compared, forked) -> None:
    (fresh, _), (result, _) = compared, forked
    assert _outcomes(result) == _outcomes(fresh)
    assert result.broken and result.failing_before and result.not_run and result.passed and result.skipped


def test_forked_tests_start_with_torch_imported_and_the_hub_not(compared, forked, fresh_runs: Path) -> None:
    seen = [
        (start["parent"] == os.getpid(), start["torch_dynamo_imported"], start["hub_imported"])
        for start in _started(forked[1])
    ]
    assert seen == [(False, True, False)] * 2
    fresh = [(start["parent"] == os.getpid(), start["torch_dynamo_imported"]) for start in _started(fresh_runs)]
    assert fresh == [(True, False)] * 2


def test_a_run_past_its_budget_is_killed_with_its_process_group(compared, forked, fresh_runs: Path) -> None:
    for runs in (fresh_runs, forked[1]):
        for side in SIDES:
            pytest_pid, sleeper = json.loads((runs / side / "pids.json").read_text())
            assert not alive(pytest_pid) and not alive(sleeper)


def test_another_interpreter_than_the_zygotes_runs_the_tests_afresh(
    checkout_and_trees, compared, zygote: Zygote, tmp_path: Path
) -> None:
    """The zygote serves its own interpreter alone: the same one by another path starts a fresh process."""
    checkout, trees = checkout_and_trees
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    python.chmod(0o755)
    fast = f"{MODULE}::OpsFastTests"
    result = run_own_tests(python, checkout, trees, [fast], tmp_path / "runs", zygote=zygote)
    assert (result.broken, result.failing_before) == (compared[0].broken, compared[0].failing_before)
    assert [(start["parent"], start["torch_dynamo_imported"]) for start in _started(tmp_path / "runs")] == [
        (os.getpid(), False)
    ] * 2
