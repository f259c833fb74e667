"""A file's changes become rewrites: where they are, what holds them, which rules made them."""

from __future__ import annotations

import os
from dataclasses import replace
from importlib.util import cache_from_source
from pathlib import Path

from bot.verify.planning.changes import rewrite_copy, rewrites_of, why_nothing_changed
from codemods.engine.run_result import Mode, RunResult
from codemods.findings import Edit, Finding, Fix, FixSafety, ImportRequest, NodeRef
from codemods.project.index import installed_diffusers

BEFORE = """\
import torch


class Rope(torch.nn.Module):
    def forward(self, device):
        return self.freqs.to(device)


class Model(torch.nn.Module):
    def forward(self, x):
        return self.block(x).sample
"""

AFTER = """\
import torch
from .utils import lru_cache_unless_export


class Rope(torch.nn.Module):
    @lru_cache_unless_export(maxsize=None)
    def _get_device_freqs(self, device):
        return self.freqs.to(device)

    def forward(self, device):
        return self._get_device_freqs(device)


class Model(torch.nn.Module):
    _repeated_blocks = ["Block"]

    def forward(self, x):
        return self.block(x, return_dict=False)[0]
"""


def _finding(code: str, line: int, *edits: Edit, imports: tuple[ImportRequest, ...] = ()) -> Finding:
    fix = Fix(FixSafety.UNSAFE, "fix", edits, imports)
    return Finding(code, "pkg/m.py", line, 0, line, 10, "message", fix=fix, fixed=True)


def _fixed() -> list[Finding]:
    return [
        _finding(
            "DIF001",
            6,
            Edit(NodeRef("ClassDef", 4, 0, 6, 36), "add_getter", inserts=True),
            Edit(NodeRef("Call", 6, 15, 6, 36), "use_getter"),
            imports=(ImportRequest(".utils", "lru_cache_unless_export"),),
        ),
        _finding("DIF003", 9, Edit(NodeRef("ClassDef", 9, 0, 11, 33), "add_blocks", inserts=True)),
        _finding("DIF004", 11, Edit(NodeRef("Attribute", 11, 15, 11, 33), "subscript")),
    ]


def test_each_changed_block_is_one_rewrite_placed_in_the_rewritten_file() -> None:
    rewrites = rewrites_of("m.py", "pkg/m.py", BEFORE, AFTER, _fixed())
    assert [(r.where, r.owner, r.qualname) for r in rewrites] == [
        ("m.py:2", "<module>", "<module>"),
        ("m.py:6", "Rope", "Rope._get_device_freqs"),
        ("m.py:11", "Rope", "Rope.forward"),
        ("m.py:15", "Model", "Model"),
        ("m.py:18", "Model", "Model.forward"),
    ]


def test_rules_come_from_the_fix_edits_that_touched_the_block() -> None:
    rewrites = rewrites_of("m.py", "pkg/m.py", BEFORE, AFTER, _fixed())
    assert [r.rules for r in rewrites] == [("DIF001",), ("DIF001",), ("DIF001",), ("DIF003",), ("DIF004",)]


def test_an_inserted_class_attribute_is_class_level_and_a_method_is_not() -> None:
    rewrites = rewrites_of("m.py", "pkg/m.py", BEFORE, AFTER, _fixed())
    assert [r.class_level for r in rewrites] == [False, False, False, True, False]


def test_rewrite_lines_are_the_new_lines_of_the_rewritten_file() -> None:
    getter = rewrites_of("m.py", "pkg/m.py", BEFORE, AFTER, _fixed())[1]
    assert sorted(getter.lines) == [6, 7, 8, 9]


def _run(*findings: Finding) -> RunResult:
    return RunResult(Mode.WRITE, [], files_scanned=1, findings=list(findings))


def test_nothing_changed_because_nothing_was_found_says_so_for_the_selected_rules_and_files() -> None:
    assert why_nothing_changed(_run(), ("DIF001",), narrowed=True) == "no DIF001 finding in the selected files"


def test_nothing_changed_because_every_finding_is_report_only_counts_them() -> None:
    report_only = Finding("DIF002", "pkg/m.py", 3, 0, 3, 9, "message")
    assert why_nothing_changed(_run(report_only, report_only), None, narrowed=False) == (
        "no finding with a fix in the tree: 2 finding(s), each report-only"
    )


def test_nothing_changed_because_fixes_were_declined_gives_their_reasons_most_common_first() -> None:
    copied = replace(_fixed()[0], fixed=False, not_fixed_reason="a copy whose source is outside the selected files")
    conflict = replace(copied, not_fixed_reason="overlaps another fix")
    assert why_nothing_changed(_run(copied, conflict, copied), ("DIF001",), narrowed=True) == (
        "no DIF001 fix applied in the selected files: 3 declined: "
        "a copy whose source is outside the selected files (2); overlaps another fix (1)"
    )


def test_runs_sharing_an_original_copy_it_once_and_link_it_and_a_later_own_copy_leaves_it_alone(tmp_path: Path) -> None:
    src = tmp_path / "checkout" / "src" / "diffusers"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text('__version__ = "0.1"\n')
    shared = tmp_path / "shared"
    first = rewrite_copy(src, tmp_path / "first", select=("DIF004",), original=shared)
    bytecode = first.original / "__pycache__" / "__init__.cpython-311.pyc"
    bytecode.parent.mkdir()
    bytecode.write_bytes(b"what the first run's worker compiled")

    second = rewrite_copy(src, tmp_path / "second", select=("DIF004",), original=shared)
    assert (tmp_path / "second" / "original").is_symlink()
    assert second.original.resolve() == first.original.resolve() == (shared / "diffusers").resolve()
    assert (second.original / "__pycache__" / bytecode.name).read_bytes() == b"what the first run's worker compiled"

    own = rewrite_copy(src, tmp_path / "second", select=("DIF004",))
    assert not (tmp_path / "second" / "original").is_symlink() and (own.original / "__init__.py").is_file()
    assert bytecode.is_file()  # the shared copy, linked there before, is not cleared through the link


def test_the_rewritten_copy_of_a_shared_original_links_its_files_and_bytecode_the_rewritten_files_aside(
    tmp_path: Path, scan_cache: Path
) -> None:
    src, ddpm = installed_diffusers(), "pipelines/ddpm/pipeline_ddpm.py"
    shared = tmp_path / "shared"
    first = rewrite_copy(src, tmp_path / "first", ("DIF004",), (src / ddpm,), cache_dir=scan_cache, original=shared)
    for module in ("__init__.py", ddpm):  # what the first run's original-side worker compiled
        bytecode = Path(cache_from_source(str(first.original / module)))
        bytecode.parent.mkdir(exist_ok=True)
        bytecode.write_bytes(b"compiled")

    second = rewrite_copy(src, tmp_path / "second", ("DIF004",), (src / ddpm,), cache_dir=scan_cache, original=shared)
    assert second.changed_files == [ddpm]
    assert os.path.samefile(second.rewritten / "__init__.py", shared / "diffusers" / "__init__.py")
    assert Path(cache_from_source(str(second.rewritten / "__init__.py"))).read_bytes() == b"compiled"
    assert not Path(cache_from_source(str(second.rewritten / ddpm))).exists()
    assert (second.original / ddpm).read_text() == (src / ddpm).read_text() != (second.rewritten / ddpm).read_text()
