"""`codemod run --check` says what a write will do: a fix whose `# Copied from` group cannot change is
declined in the resolve phase, which both see, not only by the fixer (which a check never runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemods.engine.entry import Mode, RunOptions, RunResult, run
from codemods.findings import Finding
from tests.installed_trees import copy_installed_diffusers

ANIMATEDIFF = "pipelines/animatediff"
# Both `decode_latents` are `# Copied from` the text-to-video pipeline in pipelines/deprecated/ (installed 0.42.1).
COPIES = {f"{ANIMATEDIFF}/pipeline_animatediff_sdxl.py": 645, f"{ANIMATEDIFF}/pipeline_animatediff_sparsectrl.py": 468}
SOURCE = "pipelines/deprecated/text_to_video_synthesis/pipeline_text_to_video_synth.py"


# The pipelines the three files copy from or are copied by (the runs find the same there as in the whole tree,
# and read less than half of its facts).
PIPELINES = (
    "animatediff",
    "controlnet",
    "deprecated",
    "latent_consistency_models",
    "stable_diffusion",
    "stable_diffusion_xl",
)


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_installed_diffusers(tmp_path_factory.mktemp("installed"), PIPELINES) / "diffusers"


def _run(package: Path, mode: Mode) -> RunResult:
    # One cache for the check and the write, as a user's check then write share one: the write reads back the
    # facts of the ~500 files the check's resolution read, and resolves (where the copies are declined) again.
    paths = tuple(package / name for name in (*COPIES, SOURCE))
    return run(RunOptions(paths=paths, mode=mode, unsafe_fixes=True, jobs=1, cache_dir=package.parent / "cache"))


def _copied(result: RunResult, package: Path) -> dict[str, Finding]:
    found = {}
    for finding in result.findings:
        name = str(Path(finding.path).relative_to(package))
        if finding.code == "DIF004" and COPIES.get(name) == finding.line:
            found[name] = finding
    return found


def test_check_and_write_agree_on_copies_of_deprecated_code(package: Path) -> None:
    check = _copied(_run(package, Mode.CHECK), package)
    before = {name: (package / name).read_text() for name in (*COPIES, SOURCE)}
    written = _run(package, Mode.WRITE)
    write = _copied(written, package)
    assert sorted(check) == sorted(write) == sorted(COPIES)
    deprecated = f"{package.name}/{SOURCE} may not change (diffusers accepts no changes to pipelines/deprecated/)"
    for name in COPIES:
        assert (check[name].fix, write[name].fix) == (None, None)  # neither fixable, nor counted as such
        assert not write[name].fixed
        assert check[name].not_fixed_reason == write[name].not_fixed_reason
        assert check[name].not_fixed_reason.endswith(f"both must change together, and {deprecated}")
    assert written.summary()["fixable"] == 0
    # The two `decode_latents` and their deprecated source are left as they were (other fixes still apply).
    assert all(
        before[name].splitlines()[line - 1] == (package / name).read_text().splitlines()[line - 1]
        for name, line in COPIES.items()
    )
    assert (package / SOURCE).read_text() == before[SOURCE]
