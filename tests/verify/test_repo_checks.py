"""The checkout's own repository checks run on the original and the rewritten tree; only new failures count."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from main_like import write_checkout

from bot.verify.checkout.repo_checks import checkout_checks

COPY = "schedulers/scheduling_unipc_multistep.py"
MARK = "# Copied from diffusers.schedulers.scheduling_flow_match_euler_discrete.FlowMatchEulerDiscreteScheduler._time_shift_linear"
BODY = "return mu / (mu + (1 / t - 1) ** sigma)"


def _checkout(tmp_path: Path, makefile: str) -> Path:
    (tmp_path / "checkout" / "src" / "diffusers").mkdir(parents=True)
    (tmp_path / "checkout" / "src" / "diffusers" / "__init__.py").write_text("")
    (tmp_path / "checkout" / "Makefile").write_text(makefile)
    return tmp_path / "checkout"


def _trees(checkout: Path, tmp_path: Path) -> dict[str, Path]:
    rewritten = tmp_path / "rewritten" / "diffusers"
    shutil.copytree(checkout / "src" / "diffusers", rewritten)
    return {"original": checkout / "src" / "diffusers", "rewritten": rewritten}


def test_a_rewrite_that_changes_a_copy_and_not_its_source_breaks_check_copies_with_its_output(tmp_path: Path) -> None:
    checkout = write_checkout(tmp_path / "checkout")
    trees = _trees(checkout, tmp_path)
    copy = trees["rewritten"] / COPY
    text = copy.read_text()
    at = text.index(BODY, text.index(MARK))
    copy.write_text(text[:at] + "return mu / (mu + (1.0 / t - 1) ** sigma)" + text[at + len(BODY) :])
    result = checkout_checks(checkout, trees, tmp_path / "work", Path(sys.executable))
    assert [check.name for check in result.broken] == ["python utils/check_copies.py"]
    line = copy.read_text().splitlines().index("    def _time_shift_linear(self, mu, sigma, t):") + 1
    assert result.broken[0].output == (
        f"src/diffusers/{COPY}:{line}: _time_shift_linear is not a copy of "
        "diffusers.schedulers.scheduling_flow_match_euler_discrete.FlowMatchEulerDiscreteScheduler._time_shift_linear\n"
        "Run `make fix-copies` to fix them."
    )


def test_a_check_that_fails_on_the_original_tree_too_is_not_the_changes_fault(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path, "repo-consistency:\n\tpython -c 'raise SystemExit(\"stale table\")'\n")
    result = checkout_checks(checkout, _trees(checkout, tmp_path), tmp_path / "work", Path(sys.executable))
    assert [(c.before, c.after, c.output) for c in result.checks] == [("failed", "failed", "stale table")]
    assert result.broken == []


def test_a_check_whose_command_the_environment_lacks_is_not_run(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path, "quality:\n\tdoc-builder-not-installed style src --check_only\n")
    result = checkout_checks(checkout, _trees(checkout, tmp_path), tmp_path / "work", Path(sys.executable))
    assert [(c.before, c.after) for c in result.checks] == [("not run", "not run")]
    assert result.line() == (
        "repository checks: 0 run, none broken by the change; not run: doc-builder-not-installed style src --check_only"
    )


def test_a_check_runs_from_the_checkout_root_with_the_makefiles_exports(tmp_path: Path) -> None:
    makefile = (
        "export PYTHONPATH = src\n\nquality:\n\tpython -c 'import diffusers, sys; sys.exit(diffusers.__file__)'\n"
    )
    checkout = _checkout(tmp_path, makefile)
    result = checkout_checks(checkout, _trees(checkout, tmp_path), tmp_path / "work", Path(sys.executable))
    assert [c.output for c in result.checks] == [
        str(tmp_path / "work" / "rewritten" / "src" / "diffusers" / "__init__.py")
    ]


def test_the_original_trees_checks_run_once_for_every_change_to_the_same_tree(tmp_path: Path) -> None:
    makefile = "repo-consistency:\n\tpython -c 'import pathlib; pathlib.Path(\"ran\").touch()'\n"
    checkout = _checkout(tmp_path, makefile)
    trees = _trees(checkout, tmp_path)
    for group in ("first", "second"):
        checkout_checks(checkout, trees, tmp_path / group, Path(sys.executable))
    ran = sorted(path.relative_to(tmp_path).as_posix() for path in tmp_path.glob("*/*/ran"))
    assert ran == ["first/original/ran", "first/rewritten/ran", "second/rewritten/ran"]


def test_a_check_the_changed_files_cannot_affect_is_not_run_and_says_why(tmp_path: Path) -> None:
    makefile = "repo-consistency:\n\tpython utils/check_doc_toc.py\n"
    checkout = _checkout(tmp_path, makefile)
    trees = _trees(checkout, tmp_path)
    result = checkout_checks(checkout, trees, tmp_path / "work", Path(sys.executable), changed=["__init__.py"])
    assert [(c.before, c.after, c.why) for c in result.checks] == [
        ("not affected", "not affected", "reads docs/source/en/_toctree.yml; no changed file is one")
    ]
    assert result.line() == "repository checks: 0 run, none broken by the change; 1 the changed files cannot affect"
    assert not (tmp_path / "work").exists()


def test_a_check_known_to_fail_on_the_original_tree_is_not_rerun_on_the_next_rewritten_one(tmp_path: Path) -> None:
    makefile = (
        'repo-consistency:\n\tpython -c \'import pathlib; pathlib.Path("ran").touch(); raise SystemExit("stale")\'\n'
    )
    checkout = _checkout(tmp_path, makefile)
    trees = _trees(checkout, tmp_path)
    for group in ("first", "second"):
        result = checkout_checks(checkout, trees, tmp_path / group, Path(sys.executable))
    ran = sorted(path.relative_to(tmp_path).as_posix() for path in tmp_path.glob("*/*/ran"))
    assert ran == ["first/original/ran", "first/rewritten/ran"]
    assert [(c.before, c.after, c.output) for c in result.checks] == [("failed", "not rerun", "stale")]
