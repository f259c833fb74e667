"""The scan cache never changes an answer: a warm run says exactly what a cold one says, whatever ran before."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import codemod

import codemods
from codemods.engine.cache import tool_digest
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


# The whole-result cache of a check (codemods/engine/result_cache.py): keyed by every input the check reads.

MODEL = "models/transformers/transformer_omnigen.py"
PIPELINE = "pipelines/omnigen/pipeline_omnigen.py"
GATED_TESTS = {
    "tests/__init__.py": "",
    "tests/compile.py": (
        "class TorchCompileTesterMixin:\n    def test_torch_compile_repeated_blocks(self):\n"
        "        if not self.model_class._repeated_blocks:\n            return\n"
    ),
    "tests/test_omnigen.py": (
        "from diffusers import OmniGenTransformer2DModel\n\nfrom .compile import TorchCompileTesterMixin\n\n\n"
        "class TestOmniGenCompile(TorchCompileTesterMixin):\n    model_class = OmniGenTransformer2DModel\n"
    ),
}


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A checkout's `src/diffusers` whose model DIF003 reports, as its pipeline calls it in its loop."""
    cut = find_case("DIF003/docstring_then_init").input_files()
    package = {MODEL: cut["docstring_then_init.py"], PIPELINE: cut["pipeline_omnigen.py"]}
    package |= {f"{directory}/__init__.py": "" for directory in ("models", "models/transformers", "pipelines", "pipelines/omnigen")}
    write_files({"__init__.py": "", **package}, tmp_path / "checkout" / "src" / "diffusers")
    return tmp_path / "checkout"


def _check(path: Path, cache: Path | None) -> RunResult:
    return run(RunOptions(paths=(path,), mode=Mode.CHECK, select=("DIF003",), cache_dir=cache))


def _changes_with(checkout: Path, tmp_path: Path, edit) -> tuple[RunResult, RunResult, RunResult]:
    """A cached check of the model's file, the warm check after `edit()`, and a cold check of the same."""
    model = checkout / "src" / "diffusers" / MODEL
    before = _check(model, tmp_path / "cache")
    edit()
    return before, _check(model, tmp_path / "cache"), _check(model, None)


def test_a_warm_check_reuses_the_whole_result_without_importing_a_rule(checkout: Path, tmp_path: Path) -> None:
    model = checkout / "src" / "diffusers" / MODEL
    script = (
        "import sys; from pathlib import Path; from codemods.engine.entry import Mode, RunOptions, run\n"
        f"result = run(RunOptions(paths=(Path({str(model)!r}),), mode=Mode.CHECK, cache_dir=Path({str(tmp_path)!r})))\n"
        "print(result.scan_stats.result_reused, len(result.findings), "
        "sorted(m for m in sys.modules if m.startswith('codemods.rules.') and m != 'codemods.rules.base'), "
        "sorted(m for m in sys.modules if m.startswith('codemods.analysis.')))\n"
    )
    cold, warm = (subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True) for _ in "12")
    assert cold.stdout.startswith("False 1 ['codemods.rules.complex_buffer'")
    # Nor the analyses (a tenth of a warm run's time when they were), not even for the values DIF003's findings
    # carried for its `resolve` (the result is kept without them).
    assert warm.stdout == "True 1 [] []\n"


# What a warm `codemod run --check` (the pre-commit hook's every run) imports of the tool: the command line without
# `verify` and `bot`, the lookup of the known result and the text report. No scan, rule, analysis or worker pool:
# each was a share of a warm run's time when it was imported.
WARM_CHECK_IMPORTS = [
    "codemod_cli",
    "codemod_cli.app",
    "codemod_cli.options",
    "codemod_cli.run",
    "codemods",
    "codemods.engine",
    "codemods.engine.cache",
    "codemods.engine.discovery",
    "codemods.engine.result_cache",
    "codemods.engine.run_inputs",
    "codemods.engine.run_result",
    "codemods.errors",
    "codemods.findings",
    "codemods.output",
    "codemods.output.report",
    "codemods.project",
    "codemods.project.config",
    "codemods.project.frozen",
    "codemods.project.layout",
]


def test_a_warm_check_from_the_command_line_imports_only_the_lookup_and_the_report(
    checkout: Path, tmp_path: Path
) -> None:
    model = checkout / "src" / "diffusers" / MODEL
    cold, warm = (
        codemod("run", "--check", str(model), cwd=tmp_path, context=False, env={"PYTHONPROFILEIMPORTTIME": "1"})
        for _ in "12"
    )
    imported = [line.rsplit("|", 1)[1].strip() for line in warm.stderr.splitlines() if line.startswith("import time:")]
    assert (cold.returncode, warm.returncode, warm.stdout) == (1, 1, cold.stdout)
    assert "DIF003" in warm.stdout
    assert sorted(name for name in imported if name.split(".")[0] in ("codemods", "codemod_cli")) == WARM_CHECK_IMPORTS
    assert not {"concurrent.futures", "multiprocessing", "hashlib", "tempfile", "json"} & set(imported)


def test_a_warm_check_names_the_rules_of_the_cold_one(checkout: Path, tmp_path: Path) -> None:
    cold = _check(checkout / "src" / "diffusers" / MODEL, tmp_path / "cache")
    warm = _check(checkout / "src" / "diffusers" / MODEL, tmp_path / "cache")
    assert (cold.scan_stats.result_reused, warm.scan_stats.result_reused) == (False, True)
    assert [(r.code, r.name) for r in warm.rules] == [(r.code, r.name) for r in cold.rules] == [
        ("DIF003", "missing-repeated-blocks")
    ]
    assert _shown(warm) == _shown(cold)


def test_a_change_to_a_file_the_check_did_not_scan_changes_the_warm_result(checkout: Path, tmp_path: Path) -> None:
    pipeline = checkout / "src" / "diffusers" / PIPELINE
    before, warm, cold = _changes_with(
        checkout, tmp_path, lambda: pipeline.write_text(pipeline.read_text().replace("OmniGenPipeline", "OtherPipeline"))
    )
    assert "`OmniGenPipeline` calls it" in before.findings[0].message
    assert "`OtherPipeline` calls it" in warm.findings[0].message
    assert _shown(warm) == _shown(cold)


def test_a_change_to_the_checkouts_tests_changes_the_warm_result(checkout: Path, tmp_path: Path) -> None:
    write_files(GATED_TESTS, checkout)
    test_module = checkout / "tests" / "test_omnigen.py"
    before, warm, cold = _changes_with(
        checkout, tmp_path, lambda: test_module.write_text(test_module.read_text().replace("model_class = ", "other = "))
    )
    assert "it turns on tests that never ran for this model" in before.findings[0].not_fixed_reason
    assert (warm.findings[0].not_fixed_reason, warm.findings[0].fix_safety) == (None, "safe")
    assert _shown(warm) == _shown(cold)


def test_a_change_to_the_codemod_configuration_changes_the_warm_result(checkout: Path, tmp_path: Path) -> None:
    pyproject = checkout / "pyproject.toml"
    pyproject.write_text("[tool.codemod]\n")
    model = checkout / "src" / "diffusers" / MODEL
    before = run(RunOptions(paths=(model,), mode=Mode.CHECK, cache_dir=tmp_path / "cache"))
    pyproject.write_text('[tool.codemod]\nignore = ["DIF003"]\n')
    warm = run(RunOptions(paths=(model,), mode=Mode.CHECK, cache_dir=tmp_path / "cache"))
    assert ([f.code for f in before.findings], warm.findings) == (["DIF003"], [])


def test_a_change_to_the_tools_source_is_a_miss(checkout: Path, tmp_path: Path, monkeypatch) -> None:
    model = checkout / "src" / "diffusers" / MODEL
    _check(model, tmp_path / "cache")
    monkeypatch.setattr("codemods.engine.result_cache.tool_digest", lambda: "another tool")
    assert _check(model, tmp_path / "cache").scan_stats.result_reused is False


def test_the_tools_source_is_every_module_of_the_static_side_not_only_the_engine(monkeypatch) -> None:
    read: list[Path] = []
    read_bytes = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda path: read.append(path) or read_bytes(path))
    tool_digest.__wrapped__()
    assert read == sorted(Path(codemods.__file__).resolve().parent.rglob("*.py"))
    assert any(path.parent.name == "rules" for path in read)


def test_a_change_to_the_context_package_is_a_miss(tmp_path: Path) -> None:
    # A file outside any package looks classes up in `--context`: what the package holds can change its findings.
    context = tmp_path / "context" / "diffusers"
    context.mkdir(parents=True)
    (context / "__init__.py").write_text("")
    (context / "models.py").write_text("class Model:\n    pass\n")
    (tmp_path / "lone.py").write_text("from diffusers.models import Model\n")

    def reused() -> bool:
        options = RunOptions(paths=(tmp_path / "lone.py",), mode=Mode.CHECK, context=context, cache_dir=tmp_path / "c")
        return run(options).scan_stats.result_reused

    first, warm = reused(), reused()
    (context / "models.py").write_text("class Model:\n    sample = 1\n")
    assert (first, warm, reused()) == (False, True, False)


@pytest.mark.parametrize("edited", [False, True])
def test_a_first_run_keeps_its_result_only_where_no_input_changed_after_it_began(
    package: Path, tmp_path: Path, edited: bool
) -> None:
    # A first run (an empty cache) makes its result's key at its end, of the digests its workers made as they read.
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
