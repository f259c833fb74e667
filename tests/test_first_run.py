"""A first run (an empty cache): its workers digest the files they scan, and its result's key waits for those digests."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemods.engine.entry import Mode, RunOptions, run
from codemods.project.index import installed_diffusers
from tools.fixture_cases import all_cases, write_files


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A package of the DIF004 fixture inputs: enough files that the scan runs in workers."""
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    for case in all_cases("DIF004"):
        write_files(case.input_files(), root)
    return root


@pytest.mark.parametrize("edited", [False, True])
def test_a_first_run_keeps_its_result_only_where_no_input_changed_after_it_began(
    package: Path, tmp_path: Path, edited: bool
) -> None:
    cache = tmp_path / "cache"
    options = RunOptions(context=installed_diffusers(), paths=(package,), mode=Mode.CHECK, jobs=2, cache_dir=cache)
    changed = sorted(package.glob("*.py"))[1]

    def edit_before_the_scan(phase: str, done: int, total: int) -> None:
        if edited and (phase, done) == ("scan", 0):
            changed.write_text(changed.read_text() + "\n# edited once the run had begun\n")

    first = run(options, edit_before_the_scan)
    second = run(options)
    assert len(first.findings) > 3
    assert (len(list(cache.glob("result-*.pickle"))), second.scan_stats.result_reused) == (1, not edited)
    assert second.scan_stats.files_parsed == 0  # the scans the first run's workers keyed are the ones it looks up
