"""The scan cache never changes an answer: a warm run says exactly what a cold one says, whatever ran before."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_runner import codemod

from codemods.engine.entry import Mode, RunOptions, RunResult, run
from codemods.project.index import installed_diffusers
from tools.fixture_cases import all_cases, find_case, write_files

DDPM = installed_diffusers() / "pipelines" / "ddpm" / "pipeline_ddpm.py"
# Findings whose message their rule's cross-file `resolve` completes (DIF003, DIF002).
RESOLVED_CASES = ("DIF003/docstring_then_init", "DIF002/flow_match_heun_set_timesteps")


def _shown(result: RunResult) -> list[tuple]:
    return [
        (f.path, f.line, f.column, f.code, f.message, f.fix_safety, f.fixed, f.not_fixed_reason)
        for f in result.findings
    ]


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A package of the DIF004 fixture inputs (a whole tree, as a checkout is), files of many sizes."""
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    for case in all_cases("DIF004"):
        write_files(case.input_files(), root)
    return root


def test_diff_then_sarif_then_check_on_one_cache_give_what_a_cold_check_gives(tmp_path: Path) -> None:
    target = tmp_path / "pipeline_ddpm.py"  # installed diffusers 0.42.1's DDPM pipeline, as the issue ran it
    shutil.copy(DDPM, target)
    cold = codemod("run", "--check", str(target), cwd=tmp_path, cache=tmp_path / "cold")
    assert cold.returncode == 1
    assert [line.split(": DIF004 ")[1][:4] for line in cold.stdout.splitlines()] == ["[*] ", "[*] "]

    cache = tmp_path / "shared"
    codes = [codemod("run", "--diff", str(target), cwd=tmp_path, cache=cache).returncode]
    codes.append(codemod("run", "--check", "--format", "sarif", str(target), cwd=tmp_path, cache=cache).returncode)
    warm = codemod("run", "--check", str(target), cwd=tmp_path, cache=cache)
    assert codes + [warm.returncode] == [1, 1, 1]
    assert (warm.stdout, warm.stderr) == (cold.stdout, cold.stderr)
    assert target.read_bytes() == DDPM.read_bytes()


def test_a_message_completed_by_resolve_is_not_extended_again_on_each_run(tmp_path: Path) -> None:
    root = tmp_path / "diffusers"
    for name in RESOLVED_CASES:
        write_files(find_case(name).input_files(), root)
    cold = run(RunOptions(context=installed_diffusers(), paths=(root,), mode=Mode.CHECK))
    cache = tmp_path / "cache"
    for _ in range(3):
        run(RunOptions(context=installed_diffusers(), paths=(root,), mode=Mode.DIFF, unsafe_fixes=True, cache_dir=cache))
    warm = run(RunOptions(context=installed_diffusers(), paths=(root,), mode=Mode.CHECK, cache_dir=cache))
    assert [f.code for f in cold.findings] == ["DIF003", "DIF002"]
    assert _shown(warm) == _shown(cold)
    assert warm.findings[0].message.count("calls it in its denoising loop") == 1


def test_warm_findings_come_in_the_same_order_as_cold(package: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cold = run(RunOptions(context=installed_diffusers(), paths=(package,), mode=Mode.CHECK, jobs=2, cache_dir=cache))
    warm = run(RunOptions(context=installed_diffusers(), paths=(package,), mode=Mode.CHECK, jobs=2, cache_dir=cache))
    assert len({f.path for f in cold.findings}) > 3
    assert _shown(warm) == _shown(cold)
    assert _shown(cold) == sorted(_shown(cold), key=lambda shown: (shown[0], shown[1], shown[2], shown[3]))


def test_a_new_rule_selection_reuses_the_cached_results_of_the_rules_it_shares(package: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    files = len(list(package.rglob("*.py")))
    first = run(RunOptions(context=installed_diffusers(), paths=(package,), mode=Mode.CHECK, select=("DIF004",), cache_dir=cache))
    wider = run(RunOptions(context=installed_diffusers(), paths=(package,), mode=Mode.CHECK, select=("DIF004", "DIF001"), cache_dir=cache))
    narrower = run(RunOptions(context=installed_diffusers(), paths=(package,), mode=Mode.CHECK, select=("DIF001",), cache_dir=cache))
    stats = [
        (r.scan_stats.files_parsed, r.scan_stats.rule_results_reused, r.scan_stats.rule_results_computed)
        for r in (first, wider, narrower)
    ]
    assert stats == [(files, 0, files), (files, files, files), (0, files, 0)]
    assert _shown(wider) == sorted(_shown(first) + _shown(narrower), key=lambda shown: shown[:4])


@pytest.mark.parametrize("marker", ["pyproject.toml", ".git"])
def test_the_cache_lands_at_the_project_root_not_in_the_current_directory(tmp_path: Path, marker: str) -> None:
    project = tmp_path / "project"
    source = project / "src" / "pkg"
    source.mkdir(parents=True)
    (project / marker).mkdir() if marker == ".git" else (project / marker).write_text("")
    (source / "pipeline.py").write_text(find_case("DIF004/adapter_denoising_loop").input_text())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = codemod("run", "--check", str(source), cwd=elsewhere, default_cache=True)
    assert result.returncode == 1
    assert (project / ".codemod_cache" / ".gitignore").is_file()
    assert list(elsewhere.iterdir()) == []
