"""The repository checks are read from the checkout's Makefile and PR workflows, not from a list of ours."""

from __future__ import annotations

from pathlib import Path

from main_like import write_checkout

from bot.verify.checkout.repo_check_list import RepoCheck, read_makefile, repo_checks

PLUMBED = """\
export PYTHONPATH = src

repo-consistency:
\tpython utils/check_dummies.py
\t$(MAKE) deps_check

deps_check:
\t@md5sum table.py > md5sum.saved
\t@python setup.py deps_table_update
\t@md5sum -c --quiet md5sum.saved || (printf "outdated" && exit 1)
"""


def test_checks_come_from_the_workflow_jobs_and_the_makefile_targets_of_a_main_like_checkout(tmp_path: Path) -> None:
    checkout = write_checkout(tmp_path / "checkout")
    quality = ".github/workflows/pr_tests.yml: check_code_quality (+1 more)"  # the Makefile's `quality`
    consistency = ".github/workflows/pr_tests.yml: check_repository_consistency"
    also_made = f"{consistency} (+1 more)"  # the Makefile's `repo-consistency`
    assert repo_checks(checkout) == [
        RepoCheck("ruff check src utils setup.py", ("ruff check src utils setup.py",), quality),
        RepoCheck("ruff format --check src utils setup.py", ("ruff format --check src utils setup.py",), quality),
        RepoCheck("python utils/check_copies.py", ("python utils/check_copies.py",), also_made),
        RepoCheck("python utils/check_dummies.py", ("python utils/check_dummies.py",), consistency),
    ]


def test_a_sub_make_line_is_replaced_by_its_target_and_shell_plumbing_stays_one_check(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text(PLUMBED)
    assert repo_checks(tmp_path) == [
        RepoCheck("python utils/check_dummies.py", ("python utils/check_dummies.py",), "Makefile: repo-consistency"),
        RepoCheck(
            "make deps_check",
            (
                "md5sum table.py > md5sum.saved",
                "python setup.py deps_table_update",
                'md5sum -c --quiet md5sum.saved || (printf "outdated" && exit 1)',
            ),
            "Makefile: repo-consistency (make deps_check)",
        ),
    ]


def test_the_makefile_exports_become_the_checks_environment(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text(PLUMBED)
    assert read_makefile(tmp_path / "Makefile").exported == {"PYTHONPATH": "src"}


def test_a_checkout_without_makefile_or_workflows_has_no_checks(tmp_path: Path) -> None:
    assert repo_checks(tmp_path) == []
