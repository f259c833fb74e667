"""`codemod run --unsafe-fixes` over a copy of the whole installed diffusers package.

The session fixture `diffusers_trees` (tests/conftest.py) makes a pristine copy and a copy
rewritten by every rule; these tests check the rewritten one.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from installed_trees import DiffusersTrees

from benchmarks.sweep_checks import import_failures
from codemods.engine.entry import Mode, run


def test_the_run_has_no_errors_and_changes_files(diffusers_trees: DiffusersTrees) -> None:
    assert diffusers_trees.result.errors == []
    assert diffusers_trees.result.files_scanned > 1000
    assert len(diffusers_trees.changed_files()) > 50


def test_every_changed_file_parses_and_compiles(diffusers_trees: DiffusersTrees) -> None:
    for relative in diffusers_trees.changed_files():
        path = diffusers_trees.rewritten / "diffusers" / relative
        text = path.read_text()
        ast.parse(text, filename=str(path))
        compile(text, str(path), "exec", dont_inherit=True)


def test_untouched_files_are_byte_identical(diffusers_trees: DiffusersTrees) -> None:
    changed = set(diffusers_trees.changed_files())
    original_root = diffusers_trees.original / "diffusers"
    for original in original_root.rglob("*"):
        if original.is_file() and "__pycache__" not in original.parts:
            relative = str(original.relative_to(original_root))
            rewritten = diffusers_trees.rewritten / "diffusers" / relative
            if relative not in changed:
                assert rewritten.read_bytes() == original.read_bytes(), relative


def test_a_second_run_changes_nothing(diffusers_trees: DiffusersTrees) -> None:
    # With the first run's cache, as a user's second run has it: the fixed files' scans are the first run's re-scans
    # of the texts it wrote, and cross-file resolution and fix planning run again over the whole tree.
    result = run(replace(diffusers_trees.options, mode=Mode.DIFF, jobs=2))
    assert result.changes == {}
    assert result.errors == []


def test_diffusers_and_every_changed_module_import_from_the_rewritten_copy(diffusers_trees: DiffusersTrees) -> None:
    changed = diffusers_trees.changed_files()
    status, failures = import_failures(diffusers_trees.original, diffusers_trees.rewritten, changed)
    assert (status, failures) == (f"ok ({len(changed)} modules)", {})
