"""The engine's guarantees, independent of any one rule's logic."""

from __future__ import annotations

import gc
import importlib.util
import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import codemods.engine.entry
import codemods.engine.tree_write
from codemods.engine.entry import Mode, RunOptions, run
from codemods.engine.run_inputs import RunInputs
from codemods.engine.scan import ScanJob, run_scan_job
from codemods.errors import RunAborted, RunInterrupted
from codemods.project.index import TreeInfo, installed_diffusers, module_name
from codemods.rules import select_rules
from codemods.rules.output_attribute_access import OutputAttributeAccess
from tools.fixture_cases import all_cases, write_files


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A directory with every DIF004 fixture input (one file per case)."""
    root = tmp_path / "tree"
    root.mkdir()
    for case in all_cases("DIF004"):
        write_files(case.input_files(), root)
    return root


def _findings(result) -> list[tuple]:
    return [(f.path, f.line, f.column, f.code, f.message, f.fix_safety, f.not_fixed_reason) for f in result.findings]


def test_same_findings_with_and_without_the_cache_and_with_1_or_n_jobs(tree: Path, tmp_path: Path) -> None:
    # Enough files that N jobs really use a process pool.
    for copy in range(3):
        for case in list(tree.glob("*.py"))[:9]:
            shutil.copy(case, tree / f"copy{copy}_{case.name}")
    cache = tmp_path / "cache"
    baseline = run(RunOptions(context=installed_diffusers(), paths=(tree,), mode=Mode.CHECK, jobs=1))
    cold = run(RunOptions(context=installed_diffusers(), paths=(tree,), mode=Mode.CHECK, jobs=2, cache_dir=cache))
    warm = run(RunOptions(context=installed_diffusers(), paths=(tree,), mode=Mode.CHECK, jobs=2, cache_dir=cache))
    assert len(baseline.findings) > 20
    assert _findings(baseline) == _findings(cold) == _findings(warm)
    assert list(cache.glob("scan-*.pickle")) and (cache / ".gitignore").read_text().endswith("*\n")


def test_a_file_gone_before_its_scan_is_reported_unreadable_with_or_without_a_cache(tree: Path, tmp_path: Path) -> None:
    gone = sorted(tree.glob("*.py"))[0]
    for jobs, cache in ((1, None), (2, None), (2, tmp_path / "cache")):
        options = RunOptions(context=installed_diffusers(), paths=(tree,), mode=Mode.CHECK, jobs=jobs, cache_dir=cache)
        inputs = RunInputs.of(options)  # the files found while `gone` was there
        saved = gone.read_bytes()
        gone.unlink()
        try:
            result = run(options, inputs=inputs)
        finally:
            gone.write_bytes(saved)
        assert [(e.path, e.message) for e in result.errors] == [(str(gone), "cannot read: No such file or directory")]
        assert result.findings and all(f.path != str(gone) for f in result.findings)


def test_a_changed_file_is_rescanned_not_served_from_the_cache(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    target = tree / "kandinsky_movq_subscript.py"
    first = run(RunOptions(context=installed_diffusers(), paths=(target,), mode=Mode.CHECK, cache_dir=cache))
    target.write_text(target.read_text().replace('["sample"]', '["sample"]  # codemod: ignore[DIF004]'))
    second = run(RunOptions(context=installed_diffusers(), paths=(target,), mode=Mode.CHECK, cache_dir=cache))
    assert (len(first.findings), len(second.findings)) == (1, 0)


def test_a_rule_that_crashes_is_reported_and_the_file_left_untouched(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tree / "kandinsky_movq_subscript.py"
    before = target.read_bytes()
    original_check = OutputAttributeAccess.check

    def crash_on_one_file(self, source, tree_info):
        if source.path.endswith("kandinsky_movq_subscript.py"):
            raise RuntimeError("boom")
        return original_check(self, source, tree_info)

    monkeypatch.setattr(OutputAttributeAccess, "check", crash_on_one_file)
    result = run(RunOptions(context=installed_diffusers(), paths=(tree,), jobs=1))
    assert [(Path(e.path).name, e.message) for e in result.errors] == [
        ("kandinsky_movq_subscript.py", "rule DIF004 failed: RuntimeError: boom")
    ]
    assert target.read_bytes() == before
    assert len(result.changes) > 3  # the other files were still fixed
    assert result.exit_code() == 2


def _die(job: ScanJob) -> None:
    os._exit(9)  # what the kernel's out-of-memory killer does to a worker


def test_a_worker_process_that_dies_aborts_the_run_and_nothing_is_written(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = {path: path.read_bytes() for path in tree.iterdir()}
    assert len(before) >= 8  # enough files for a process pool
    monkeypatch.setattr(codemods.engine.entry, "run_scan_job", _die)
    with pytest.raises(RunAborted, match="worker process died in the scan phase"):
        run(RunOptions(context=installed_diffusers(), paths=(tree,), jobs=2))
    assert {path: path.read_bytes() for path in tree.iterdir()} == before


# Where every rule reports in installed diffusers 0.42.1, with and without a fix (DIF008 reports nowhere in it), and
# every rule that gathers facts for other files does: a quarter of the tree's scanning time.
EVERY_RULE_REPORTS_IN = (
    "schedulers",
    "models/transformers",
    "pipelines/deprecated",
    "pipelines/kandinsky2_2",
    "pipelines/ledits_pp",
    "pipelines/z_image",
)


def test_scanning_diffusers_leaves_no_reference_cycles() -> None:
    # The scan workers run with the cycle collector off: one cycle per file kept every parsed tree
    # alive (12 GB per worker over 30,000 files).
    root = installed_diffusers()
    tree_info = TreeInfo.of(root, 119)
    codes = tuple(rule.code for rule in select_rules(None))
    files = sorted(path for folder in EVERY_RULE_REPORTS_IN for path in (root / folder).rglob("*.py"))
    # A first pass fills what is built on first use (imports, compiled patterns: cycles made once per process, which
    # the workers' own first files pay for): depending on what ran before in this process, any file may be first.
    for path in files:
        run_scan_job(ScanJob(str(path), module_name(path, root), tree_info, codes))
    reported: set[tuple[str, bool]] = set()
    gc.collect()
    gc.disable()
    try:
        for path in files:
            scan = run_scan_job(ScanJob(str(path), module_name(path, root), tree_info, codes))
            reported |= {(code, f.fix is not None) for code, rule in scan.rules for f in rule.findings}
            del scan
        assert gc.collect() == 0
    finally:
        gc.enable()
    assert reported == {(code, fixed) for code in codes if code != "DIF008" for fixed in (True, False)} - {
        ("DIF003", True),  # planned when the run resolves, after the scan
        ("DIF009", True),  # DIF009 never fixes
    }


def test_a_run_pauses_the_cycle_collector_and_its_fixes_leave_no_cycles(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The run keeps its collector off (codemods/engine/entry.py): that is only sound while scanning, resolving and
    # fixing make no reference cycles, which would otherwise stay until the collector is back.
    collector_during_scans = []
    scan_files = codemods.engine.entry._Run.scan_files

    def watched(self, *args, **kwargs):
        collector_during_scans.append(gc.isenabled())
        return scan_files(self, *args, **kwargs)

    monkeypatch.setattr(codemods.engine.entry._Run, "scan_files", watched)
    options = RunOptions(context=installed_diffusers(), paths=(tree,), mode=Mode.DIFF, unsafe_fixes=True, jobs=1)
    run(options)  # what is built once per process (imports, compiled patterns) is built here
    gc.collect()
    gc.disable()
    try:
        result = run(options)
        assert gc.collect() == 0
    finally:
        gc.enable()
    assert result.changes and collector_during_scans and not any(collector_during_scans)
    run(options)
    assert gc.isenabled()


def test_an_edit_that_crashes_leaves_the_file_untouched(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tree / "kandinsky_movq_subscript.py"
    before = target.read_bytes()

    def broken_edit(self, node, **params):
        raise ValueError("cannot edit")

    monkeypatch.setattr(OutputAttributeAccess, "edit_first_output", broken_edit)
    result = run(RunOptions(context=installed_diffusers(), paths=(target,), jobs=1))
    assert target.read_bytes() == before
    assert [e.message for e in result.errors] == ["fix failed: ValueError: cannot edit"]
    assert result.findings[0].not_fixed_reason == "fix failed: ValueError: cannot edit"


def test_an_edit_producing_invalid_code_is_not_written(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import libcst as cst

    target = tree / "kandinsky_movq_subscript.py"
    before = target.read_bytes()
    # `await` in a plain function parses (ast.parse accepts it) but does not compile.
    monkeypatch.setattr(
        OutputAttributeAccess, "edit_first_output", lambda self, node, **params: cst.Await(expression=node.value)
    )
    result = run(RunOptions(context=installed_diffusers(), paths=(target,), jobs=1))
    assert target.read_bytes() == before
    assert "does not compile" in result.errors[0].message


def test_a_non_idempotent_fix_is_refused(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import libcst as cst

    target = tree / "kandinsky_movq_subscript.py"
    before = target.read_bytes()
    # A broken edit that leaves the pattern in place (and adds to it) would fire again next run.
    monkeypatch.setattr(
        OutputAttributeAccess,
        "edit_first_output",
        lambda self, node, **params: cst.Subscript(value=node, slice=[cst.SubscriptElement(cst.Index(cst.Integer("0")))]),
    )
    result = run(RunOptions(context=installed_diffusers(), paths=(target,), jobs=1))
    assert target.read_bytes() == before
    assert "not idempotent" in result.errors[0].message


def test_writes_are_atomic_and_keep_the_file_mode(tree: Path) -> None:
    target = tree / "kandinsky_movq_subscript.py"
    os.chmod(target, 0o640)
    run(RunOptions(context=installed_diffusers(), paths=(target,), jobs=1))
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert "return_dict=False)[0]" in target.read_text()
    assert [p.name for p in tree.iterdir() if p.name.startswith(".")] == []  # no temporary file left behind


def test_static_runs_never_import_torch(tree: Path) -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from codemods.engine.entry import RunOptions, run\n"
        f"run(RunOptions(context=Path({str(installed_diffusers())!r}), paths=(Path({str(tree)!r}),), jobs=1))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'diffusers')))\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "[]"


def test_a_lone_pipeline_file_gets_the_same_findings_whether_diffusers_is_importable_or_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pre-commit hook's environment has no diffusers; the command line's usually has one.
    lone, installed = tmp_path / "pipeline_dit.py", installed_diffusers()
    shutil.copy(installed / "pipelines" / "dit" / "pipeline_dit.py", lone)
    beside = run(RunOptions(paths=(lone,), mode=Mode.CHECK, jobs=1))
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *rest: None if name == "diffusers" else real_find_spec(name, *rest)
    )
    without = run(RunOptions(paths=(lone,), mode=Mode.CHECK, jobs=1))
    named = run(RunOptions(paths=(lone,), mode=Mode.CHECK, jobs=1, context=installed))
    assert _findings(beside) == _findings(without) == []
    assert [f.code for f in named.findings] == ["DIF004"] * 3


@pytest.mark.usefixtures("python_sigint")
def test_ctrl_c_during_the_commit_finishes_it_and_says_every_file_was_written(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = shutil.copytree(tree, tmp_path / "reference")
    run(RunOptions(context=installed_diffusers(), paths=(reference,), jobs=1))
    rewritten = {path.name: path.read_bytes() for path in reference.iterdir()}
    replace, renames = os.replace, []

    def replace_then_ctrl_c(source: str, target: str) -> None:  # a real SIGINT, after the commit's second rename
        replace(source, target)
        if Path(target).parent == tree:  # `os` is patched for the whole process: count the run's writes only
            renames.append(target)
            if len(renames) == 2:
                signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(codemods.engine.tree_write.os, "replace", replace_then_ctrl_c)
    with pytest.raises(RunInterrupted) as interrupted:
        run(RunOptions(context=installed_diffusers(), paths=(tree,), jobs=1))
    assert str(interrupted.value) == (
        f"interrupted during the write; it had begun, so it was finished: all {len(renames)} rewritten file(s) written"
    )
    assert {path.name: path.read_bytes() for path in tree.iterdir()} == rewritten

