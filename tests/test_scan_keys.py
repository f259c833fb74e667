"""Copies of a tree share their scans (codemods/engine/scan_keys.py), and a shared scan says what a fresh one says."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codemods.engine.cache import content_digest
from codemods.engine.entry import Mode, RunOptions, RunResult, run
from codemods.engine.scan import FileScan
from codemods.engine.scan_keys import ScanKeys
from codemods.findings import FileError
from codemods.project.index import TreeInfo
from tools.fixture_cases import all_cases, find_case, write_files

MODEL = "models/transformers/transformer_omnigen.py"
PIPELINE = "pipelines/omnigen/pipeline_omnigen.py"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A checkout's `src/diffusers`: a model DIF003 reports as its pipeline calls it in its loop (a finding resolved
    across files), and the DIF004 fixtures' inputs (files of many sizes, fixes in several)."""
    cut = find_case("DIF003/docstring_then_init").input_files()
    package = {MODEL: cut["docstring_then_init.py"], PIPELINE: cut["pipeline_omnigen.py"]}
    package |= {f"{directory}/__init__.py": "" for directory in ("models", "models/transformers", "pipelines", "pipelines/omnigen")}
    for case in all_cases("DIF004"):
        package |= {f"dif004/{name}": text for name, text in case.input_files().items()}
    write_files({"__init__.py": "", "dif004/__init__.py": "", **package}, tmp_path / "first" / "src" / "diffusers")
    return tmp_path / "first"


def _copy(checkout: Path, to: Path) -> Path:
    shutil.copytree(checkout, to)
    return to / "src" / "diffusers"


def _write(src: Path, cache: Path | None) -> RunResult:
    return run(RunOptions(paths=(src,), mode=Mode.WRITE, unsafe_fixes=True, cache_dir=cache))


def _said(result: RunResult, src: Path) -> tuple:
    """What a run says, with each file named from its tree (so that runs on two copies compare)."""
    top = f"{src.parent}/"
    return (
        [
            (f.path.removeprefix(top), f.line, f.column, f.code, f.message, f.fix_safety, f.fixed, f.not_fixed_reason)
            for f in result.findings
        ],
        {path.removeprefix(top): texts for path, texts in result.changes.items()},
        [(e.path.removeprefix(top), e.message) for e in result.errors],
    )


def test_a_copy_of_a_tree_reuses_its_scans_and_writes_what_an_uncached_run_writes(checkout: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _write(_copy(checkout, tmp_path / "planned"), cache)
    shared_src, cold_src = _copy(checkout, tmp_path / "a" / "copy"), _copy(checkout, tmp_path / "cold")
    shared, cold = _write(shared_src, cache), _write(cold_src, None)
    assert shared.scan_stats.files_parsed == 0 < len(list(cold_src.rglob("*.py"))) <= cold.scan_stats.files_parsed
    assert _said(shared, shared_src) == _said(cold, cold_src)
    assert len(shared.changes) > 3 and any("calls it in its denoising loop" in f.message for f in shared.findings)
    assert all(path.startswith(f"{shared_src}/") for path in shared.changes)


def test_a_scan_that_names_the_place_its_tree_lay_in_is_made_again_for_a_copy(checkout: Path, tmp_path: Path) -> None:
    # A fact that holds the first tree's directory may say where that tree lay: the copy scans the file afresh.
    place = f"{checkout / 'src'}/"
    (checkout / "src" / "diffusers" / "named.py").write_text(
        f"# Copied from diffusers.models.transformers.transformer_omnigen.OmniGenBlock with {place}->here\n"
        "class NamedBlock:\n    pass\n"
    )
    cache = tmp_path / "cache"
    _write(checkout / "src" / "diffusers", cache)
    copy, cold_src = _copy(checkout, tmp_path / "copy"), _copy(checkout, tmp_path / "cold")
    shared, cold = _write(copy, cache), _write(cold_src, None)
    assert shared.scan_stats.files_parsed == 1
    assert _said(shared, copy) == _said(cold, cold_src)


def test_copies_of_a_tree_share_keys_and_trees_with_other_settings_do_not(tmp_path: Path) -> None:
    trees = {}
    for name, helpers in (("first", ""), ("copy", ""), ("other", "def lru_cache_unless_export():\n    pass\n")):
        root = write_files({"__init__.py": "", "utils/__init__.py": "", "utils/torch_utils.py": helpers}, tmp_path / name / "diffusers")
        trees[name] = (root, TreeInfo.of(root, 119))
    content = content_digest(b"x = 1\n")
    keys = {name: ScanKeys({root: tree}).key(f"{root}/models/x.py", content) for name, (root, tree) in trees.items()}
    assert keys["first"] == keys["copy"] != keys["other"]
    assert ScanKeys({}).key(f"{tmp_path}/first/x.py", content) != ScanKeys({}).key(f"{tmp_path}/copy/x.py", content)


def test_a_reused_scan_names_the_file_it_is_reused_for(tmp_path: Path) -> None:
    first, copy = tmp_path / "first" / "diffusers", tmp_path / "copy" / "diffusers"
    keys = ScanKeys({copy: TreeInfo.of(copy, 119)})
    cached = FileScan(f"{first}/x.py", None, FileError(f"{first}/x.py", "syntax error: invalid syntax", 3))
    reused = keys.reused(cached, f"{copy}/x.py")
    assert reused == FileScan(f"{copy}/x.py", None, FileError(f"{copy}/x.py", "syntax error: invalid syntax", 3))
    assert cached.path == f"{first}/x.py"  # the cached scan itself is left as it was


def test_packages_side_by_side_key_their_files_each_with_its_own_settings(tmp_path: Path) -> None:
    helper = "def lru_cache_unless_export():\n    pass\n"
    plain = write_files({"__init__.py": ""}, tmp_path / "src" / "plain")
    helped = write_files({"__init__.py": "", "utils/__init__.py": "", "utils/torch_utils.py": helper}, tmp_path / "src" / "helped")
    trees = {plain: TreeInfo.of(plain, 119), helped: TreeInfo.of(helped, 119)}
    content = content_digest(b"x = 1\n")
    for root, tree in trees.items():
        assert ScanKeys(trees).key(f"{root}/x.py", content) == ScanKeys({root: tree}).key(f"{root}/x.py", content)
