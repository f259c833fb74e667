"""The quick start: what `make demo` installs and prints, and where `make` gets torch's CPU build."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from codemods.project.index import installed_diffusers
from tools.demo_summary import declined_lines, diff_excerpt, main, summary_table
from tools.fixture_cases import find_case
from tools.torch_index import CPU_INDEX

ROOT = Path(__file__).resolve().parent.parent


def make_dry_run(target: str, tmp_path: Path) -> list[str]:
    """The commands `make -n TARGET` would run on a fresh clone (no .venv yet)."""
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    done = subprocess.run(["make", "-n", target], cwd=tmp_path, capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def finding(code: str, fix_safety: str = "none", reason: str | None = None, fixed: bool = False) -> dict:
    return {"code": code, "fix_safety": fix_safety, "not_fixed_reason": reason, "fixed": fixed}


def test_the_demo_installs_the_engine_and_the_diffusers_release_only(tmp_path: Path) -> None:
    installs = [line for line in make_dry_run("demo", tmp_path) if "pip install" in line]

    assert installs == [
        ".venv/bin/python -m pip install --quiet --upgrade pip",
        ".venv/bin/python -m pip install --quiet -e .",
        ".venv/bin/python -m pip install --quiet --no-deps diffusers==0.42.1",
    ]


def test_the_makefile_pins_torch_and_diffusers_as_pyproject_does() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    makefile = (ROOT / "Makefile").read_text()

    assert re.search(r"^TORCH := (.+)$", makefile, re.MULTILINE)[1] in extras["verify"]
    assert re.search(r"^DIFFUSERS := (.+)$", makefile, re.MULTILINE)[1] in extras["dev"]


def test_the_demo_summary_counts_each_rules_fixes_and_says_why_each_remaining_finding_is_left() -> None:
    findings = [
        finding("DIF007"),
        finding("DIF007"),
        finding("DIF004", reason="the callee takes **kwargs"),
        finding("DIF004", fix_safety="safe", fixed=True),
        finding("DIF006"),
        finding("DIF001", fix_safety="unsafe"),
    ]

    assert summary_table(findings) == (
        "rule    found  fixed  left  report only  fix declined  fixable\n"
        "DIF001      1      0     1            0             0        1\n"
        "DIF004      2      1     1            0             1        0\n"
        "DIF006      1      0     1            1             0        0\n"
        "DIF007      2      0     2            2             0        0\n"
        "total       6      1     5            3             1        1\n"
    )


def test_the_demo_counts_declined_fixes_by_reason_with_names_and_numbers_blanked() -> None:
    findings = [
        finding("DIF004", reason="the call forwards `**kwargs`, which may already carry `return_dict`"),
        finding("DIF004", reason="the call forwards `*args`, which may already carry `return_dict`"),
        finding("DIF005", reason="`timesteps` is bound by `self.get_timesteps(...)` at line 12"),
        finding("DIF004", reason="never counted: fixed", fixed=True),
    ]

    assert declined_lines(findings) == [
        "   2  DIF004  the call forwards `…`, which may already carry `…`",
        "   1  DIF005  `…` is bound by `…` at line N",
    ]


def test_the_demo_diff_excerpt_ends_at_a_hunk_boundary() -> None:
    diff = (
        "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n"
        "@@ -9 +9 @@\n--- a removed line that reads like a header\n+++ an added one\n"
        "--- a/y.py\n+++ b/y.py\n@@ -3,0 +4 @@\n+added\n"
    )

    assert diff_excerpt(diff, max_lines=9) == (
        "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n@@ -9 +9 @@\n--- a removed line that reads "
        "like a header\n+++ an added one\n",
        2,
        3,
    )
    assert diff_excerpt(diff, max_lines=8)[1:] == (1, 3)


def fake_wheel(directory: Path, version: str) -> None:
    """A wheel named torch at `version`: enough for pip to resolve it from a find-links directory."""
    directory.mkdir(exist_ok=True)
    info = f"torch-{version}.dist-info"
    with zipfile.ZipFile(directory / f"torch-{version}-py3-none-any.whl", "w") as wheel:
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", "")


def torch_index(find_links: Path | None) -> str:
    # No pip configuration but the find-links directory under test (this machine's own config has one).
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")} | {"PIP_CONFIG_FILE": os.devnull}
    env |= {"PIP_FIND_LINKS": str(find_links)} if find_links else {}
    done = subprocess.run(
        [sys.executable, "-m", "tools.torch_index", "torch==2.13.0"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_torch_comes_from_a_local_cpu_wheel_without_any_index(tmp_path: Path) -> None:
    fake_wheel(tmp_path / "wheels", "2.13.0+cpu")

    assert torch_index(tmp_path / "wheels") == ""


@pytest.mark.parametrize("local", ["2.13.0", None], ids=["a local CUDA build", "no local wheel"])
def test_torch_comes_from_the_cpu_index_otherwise(tmp_path: Path, local: str | None) -> None:
    if local:
        fake_wheel(tmp_path / "wheels", local)

    assert torch_index(tmp_path / "wheels" if local else None) == f"--index-url {CPU_INDEX}"


def test_the_full_set_up_installs_torch_before_the_project_with_all_extras(tmp_path: Path) -> None:
    installs = [line for line in make_dry_run("install", tmp_path) if "pip install" in line]

    assert installs[1:] == [
        ".venv/bin/python -m pip install --quiet --no-warn-conflicts torch==2.13.0 $(.venv/bin/python -m tools.torch_index torch==2.13.0)",
        ".venv/bin/python -m pip install --quiet -e '.[verify,bot,dev]'",
    ]


def test_the_demo_rewrites_the_tree_once_and_shows_the_table_the_diff_and_why_a_fix_was_declined(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    case = find_case("DIF004/adapter_denoising_loop")  # 3 findings: 2 fixed, 1 left (a `**kwargs` call)
    tree = tmp_path / "demo" / "src" / "diffusers"
    tree.mkdir(parents=True)
    (tree / "pipeline.py").write_text(case.input_text())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CODEMOD_CACHE_DIR", str(tmp_path / "cache"))
    # A lone file, not the whole package `make demo` copies: the classes it uses come from the installed one.
    monkeypatch.setenv("CODEMOD_CONTEXT", str(installed_diffusers()))

    assert main(["demo"]) == 0

    shown = capsys.readouterr().out
    assert (tree / "pipeline.py").read_text() == case.expected_text()
    assert "DIF004      3      2     1            0             1        0\n" in shown
    assert "--- the diff: its first 2 of 2 hunk(s), all of it in demo/fixes.diff ---\n--- a/demo/src/diffusers/pipeline.py\n" in shown
    assert "   1  DIF004  the call forwards `…`, which may already carry `…`: no dict of known keys is built fo…\n" in shown
    assert (
        "(not fixed: the call forwards `**extra_step_kwargs`, which may already carry `return_dict`: no dict of known "
        "keys is built for it here)"
    ) in (tmp_path / "demo" / "remaining.txt").read_text()
