"""A CI-sized slice of the release sweep (`make sweep`, benchmarks/sweep.py): old releases stay error-free.

Each release is a wheel from PyPI (tools/releases.py, cached), copied and run through
`codemod run --unsafe-fixes` once per module; the tests check the sweep's promises on it. 0.16.1
is the release whose Stable Diffusion copies once ended in 22 false "not idempotent" errors. (None
of these imports with this environment's huggingface_hub; the import promise is held on 0.42.1 in
test_diffusers_tree.py and on every release that imports by the sweep.)
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from benchmarks.sweep_checks import broken_copies, changed_files, uncompilable
from codemods.engine.entry import Mode, RunOptions, RunResult, run
from tools.releases import ReleaseUnavailable, release_tree

SLICE = ("0.10.0", "0.16.1", "0.21.4")


@dataclass(frozen=True)
class SweptRelease:
    original: Path  # the release's `diffusers/`, as published
    rewritten: Path
    result: RunResult
    options: RunOptions

    def changed(self) -> list[str]:
        return changed_files(self.original, self.rewritten)


@pytest.fixture(scope="module", params=SLICE)
def swept(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> SweptRelease:
    try:
        original = release_tree(request.param) / "diffusers"
    except ReleaseUnavailable as error:
        pytest.skip(str(error))
    scratch = tmp_path_factory.mktemp(f"release-{request.param}")
    rewritten = scratch / "diffusers"
    shutil.copytree(original, rewritten, ignore=shutil.ignore_patterns("__pycache__"))
    # A cache, as a user's second run would have: the second run then re-reads nothing it already knows.
    options = RunOptions(paths=(rewritten,), mode=Mode.WRITE, unsafe_fixes=True, jobs=2, cache_dir=scratch / "cache")
    return SweptRelease(original, rewritten, run(options), options)


def test_the_run_fixes_files_without_an_error(swept: SweptRelease) -> None:
    assert [str(error) for error in swept.result.errors] == []
    assert len(swept.changed()) >= 20


def test_every_changed_file_compiles(swept: SweptRelease) -> None:
    assert uncompilable(swept.rewritten, swept.changed()) == []


def test_copies_that_agreed_in_the_release_still_agree(swept: SweptRelease) -> None:
    assert broken_copies(swept.original, swept.rewritten, swept.changed()) == []


@pytest.fixture(scope="module")
def second_run(swept: SweptRelease) -> RunResult:
    """A second run over the written tree, cold: a cache must not stand in for the analysis it checks."""
    return run(replace(swept.options, mode=Mode.DIFF, cache_dir=None))


def test_a_second_run_changes_nothing(second_run: RunResult) -> None:
    # On 0.16.1 the first run's pipeline fixes unblock DIF002 in the LMS scheduler: the same run must fix it.
    assert (list(second_run.changes), second_run.errors) == ([], [])


def test_the_remaining_count_is_what_a_second_run_finds(swept: SweptRelease, second_run: RunResult) -> None:
    assert len(second_run.findings) == len(swept.result.remaining)
