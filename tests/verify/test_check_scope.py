"""A one-file change runs the repository checks that can read it, narrowed to it; the others say why not.

On the main-like checkout, whose checks are read from its Makefile and workflow (ruff, check_copies,
check_dummies), and on a Makefile with diffusers main's other check lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from main_like import write_checkout

from bot.verify.checkout.check_scope import ChangedFiles, scoped_checks
from bot.verify.checkout.repo_check_list import repo_checks

NUCLEUS = "models/transformers/transformer_nucleusmoe_image.py"
UNIPC = "schedulers/scheduling_unipc_multistep.py"  # holds `# Copied from` blocks
DDPM = "pipelines/ddpm/pipeline_ddpm.py"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_checkout(tmp_path_factory.mktemp("scope") / "checkout")


def _scoped(checkout: Path, *changed: str) -> dict[str, tuple[bool, tuple[str, ...], str]]:
    tree = checkout / "src" / "diffusers"
    changes = ChangedFiles(checkout, {"original": tree, "rewritten": tree}, list(changed))
    return {
        s.check.name: (s.runs, s.check.lines, s.why) for s in scoped_checks(repo_checks(checkout), changes, checkout)
    }


def test_ruff_runs_on_the_changed_file_alone(checkout: Path) -> None:
    runs, lines, why = _scoped(checkout, DDPM)["ruff check src utils setup.py"]
    assert (runs, lines) == (True, (f"ruff check src/diffusers/{DDPM}",))
    assert why == f"reads each file on its own: run on src/diffusers/{DDPM}"


def test_check_copies_is_left_out_for_a_file_that_neither_holds_nor_is_the_source_of_a_copy(checkout: Path) -> None:
    assert _scoped(checkout, DDPM)["python utils/check_copies.py"] == (
        False,
        ("python utils/check_copies.py",),
        "reads every `# Copied from` block and its source; no changed file is one",
    )


def test_check_copies_runs_for_a_file_that_holds_a_copy(checkout: Path) -> None:
    runs, _, why = _scoped(checkout, UNIPC)["python utils/check_copies.py"]
    assert (runs, why) == (True, f"reads every `# Copied from` block and its source: src/diffusers/{UNIPC}")


def test_check_copies_runs_for_the_source_a_copy_elsewhere_names(checkout: Path) -> None:
    source = "schedulers/scheduling_flow_match_euler_discrete.py"  # UniPC copies its _time_shift_linear
    assert _scoped(checkout, source)["python utils/check_copies.py"][0] is True


def test_check_dummies_runs_only_when_the_package_init_changes(checkout: Path) -> None:
    assert _scoped(checkout, NUCLEUS)["python utils/check_dummies.py"][0] is False
    assert _scoped(checkout, "__init__.py")["python utils/check_dummies.py"][0] is True


MAIN_LINES = """\
repo-consistency:
\tpython utils/check_doc_toc.py
\tpython utils/check_forward_call_docstrings.py
\tpython utils/check_something_new.py
"""


def test_a_check_of_other_files_is_left_out_a_per_file_script_is_narrowed_an_unknown_one_runs(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "src" / "diffusers" / "models").mkdir(parents=True)
    (checkout / "src" / "diffusers" / "models" / "x.py").write_text("")
    (checkout / "Makefile").write_text(MAIN_LINES)
    tree = checkout / "src" / "diffusers"
    changes = ChangedFiles(checkout, {"original": tree, "rewritten": tree}, ["models/x.py"])
    scoped = scoped_checks(repo_checks(checkout), changes, checkout)
    assert [(s.runs, s.check.lines, s.why) for s in scoped] == [
        (False, ("python utils/check_doc_toc.py",), "reads docs/source/en/_toctree.yml; no changed file is one"),
        (
            True,
            ("python utils/check_forward_call_docstrings.py --paths src/diffusers/models/x.py",),
            "reads each model and pipeline file on its own: src/diffusers/models/x.py",
        ),
        (
            True,
            ("python utils/check_something_new.py",),
            "what it reads is not known here: run as the checkout runs it",
        ),
    ]
