"""A checkout's own tests run on both trees: what the change broke is blamed on it, what failed before is not.

The checkout is a tiny package of our own named `diffusers` with a diffusers-style `tests/`
(its conftest puts `<checkout>/src` on sys.path, as diffusers' does); the rewritten tree
breaks one function on purpose.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from bot.verify.checkout.own_tests import OwnTests, run_own_tests
from bot.verify.reporting.report import VerifyReport

OPS = """\
def add(a, b):
    return a + b


def scale(x, factor):
    return x * factor
"""

TESTS = """\
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
        time.sleep(60)
"""

CONFTEST = """\
import sys
from os.path import abspath, dirname, join

sys.path.insert(1, abspath(join(dirname(dirname(__file__)), "src")))
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
def compared(tmp_path_factory: pytest.TempPathFactory) -> tuple[OwnTests, dict[str, Path]]:
    root = tmp_path_factory.mktemp("own-tests")
    checkout = _checkout(root / "checkout")
    trees = _trees(checkout, root / "trees")
    result = run_own_tests(Path(sys.executable), checkout, trees, [MODULE], root / "runs", budget_s=8)
    return result, trees


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
