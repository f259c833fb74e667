"""One `codemod run` reaches the tree's fixed point: a fix that unblocks another file's fix is followed.

The tree holds two files with a real DIF004 fix each. The unblocking is ours: DIF004's resolve is
wrapped so that `second.py`'s fix is held back while `first.py` still reads `.sample`, as DIF002 on
diffusers 0.16.1's LMS scheduler was held back by a pipeline that the same run fixed.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from codemods.engine.entry import Mode, RunOptions, run
from codemods.rules.output_attribute_access import OutputAttributeAccess

SOURCE, FIXED = OutputAttributeAccess.invalid[0].source, OutputAttributeAccess.invalid[0].fixed
HELD_BACK = "first.py still reads `.sample`"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "first.py").write_text(SOURCE)
    (root / "second.py").write_text(SOURCE)
    resolve = OutputAttributeAccess.resolve

    def held_back_by_first(self, finding, index):
        kept = resolve(self, finding, index)
        if kept is not None and Path(kept.path).name == "second.py" and ".sample" in index.text(str(root / "first.py")):
            return replace(kept, fix=None, not_fixed_reason=HELD_BACK)
        return kept

    monkeypatch.setattr(OutputAttributeAccess, "resolve", held_back_by_first)
    return root


def _options(root: Path, mode: Mode) -> RunOptions:
    return RunOptions(paths=(root,), mode=mode, select=("DIF004",), jobs=1)


def test_one_run_fixes_what_another_files_fix_unblocks(tree: Path) -> None:
    result = run(_options(tree, Mode.WRITE))
    assert (tree / "first.py").read_text() == FIXED
    assert (tree / "second.py").read_text() == FIXED
    assert (result.passes, [(Path(f.path).name, f.fixed) for f in result.findings]) == (
        2,
        [("first.py", True), ("second.py", True)],
    )


def test_a_second_run_then_changes_nothing(tree: Path) -> None:
    run(_options(tree, Mode.WRITE))
    again = run(_options(tree, Mode.DIFF))
    assert (again.changes, again.findings, again.passes) == ({}, [], 0)


def test_the_diff_shows_the_combined_result_of_every_pass(tree: Path) -> None:
    result = run(_options(tree, Mode.DIFF))
    assert {Path(p).name: change for p, change in result.changes.items()} == {
        "first.py": (SOURCE, FIXED),
        "second.py": (SOURCE, FIXED),
    }
    assert (tree / "second.py").read_text() == SOURCE


def test_what_is_held_back_at_the_end_is_reported_with_its_reason(tree: Path) -> None:
    kept = SOURCE.replace(".sample\n", ".sample  # codemod: ignore[DIF004] kept as it is\n")
    (tree / "first.py").write_text(kept)
    result = run(_options(tree, Mode.WRITE))
    assert (tree / "second.py").read_text() == SOURCE
    assert [(Path(f.path).name, f.fixed, f.not_fixed_reason) for f in result.findings] == [
        ("second.py", False, HELD_BACK)
    ]
