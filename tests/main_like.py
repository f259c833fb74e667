"""A checkout shaped like diffusers main, made from what CI has: installed diffusers' source as
`src/diffusers`, a `setup.py` with main-like pins (huggingface-hub below 2.0 and httpx below 1.0,
where this project's own environment has huggingface-hub 2.x), and a small `tests/` written for
this project in the layout and style of diffusers' own (unittest classes, `pipeline_class` /
`model_class`, a conftest that puts `<checkout>/src` on sys.path).

Its four changes the verifier proves on the emulated device, one rule each: DIF001 (NucleusMoE's
RoPE table copied every forward), DIF003 (PixArt's blocks), DIF004 (DDPM's `.sample`) and DIF005
(Stable Diffusion's first-step index lookup).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from main_like_files import (
    CHECK_COPIES,
    CHECK_DUMMIES,
    CONFTEST,
    MAKEFILE,
    PR_WORKFLOW,
    SETUP_PY,
    TESTING_UTILS,
    TESTS,
)
from shared_session import build_once

from bot.verify.checkout.environment import TorchSource, environment_for
from codemods.project.index import installed_diffusers

ONLY = (
    "models/transformers/transformer_nucleusmoe_image.py",
    "models/transformers/pixart_transformer_2d.py",
    "pipelines/ddpm/pipeline_ddpm.py",
    "pipelines/stable_diffusion/pipeline_stable_diffusion.py",
)


def write_checkout(root: Path) -> Path:
    """The checkout at `root` (created); returns `root`."""
    shutil.copytree(installed_diffusers(), root / "src" / "diffusers", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "setup.py").write_text(SETUP_PY)
    (root / "README.md").write_text("# a diffusers-main-like checkout made by the tests\n")
    (root / "pyproject.toml").write_text("[tool.ruff]\nline-length = 119\n")
    (root / "Makefile").write_text(MAKEFILE)
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "pr_tests.yml").write_text(PR_WORKFLOW)
    (root / "utils").mkdir()
    (root / "utils" / "check_copies.py").write_text(CHECK_COPIES)
    (root / "utils" / "check_dummies.py").write_text(CHECK_DUMMIES)
    (root / "tests").mkdir()
    (root / "tests" / "conftest.py").write_text(CONFTEST)
    (root / "tests" / "testing_utils.py").write_text(TESTING_UTILS)
    for relative, text in TESTS.items():
        path = root / "tests" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for directory in [root / "tests", *(p for p in (root / "tests").rglob("*") if p.is_dir())]:
        (directory / "__init__.py").touch()
    return root


@dataclass(frozen=True)
class MainLike:
    checkout: Path
    python: Path  # the checkout's environment, built by `environment_for` on top of this project's packages
    cache: Path
    progress: list[str]  # what the build said


def build_main_like(directory: Path) -> MainLike:
    """The checkout and its environment, built the way the tool builds it.

    Layered on this project's interpreter (`base`), so only what the checkout pins differently
    (huggingface-hub 1.x, httpx) is installed: seconds, not the minutes of a full build.
    """
    checkout = write_checkout(directory / "checkout")
    cache, progress = directory / "envs", []
    cache.mkdir()
    python = environment_for(checkout, TorchSource(), cache=cache, base=Path(sys.executable), progress=progress.append)
    return MainLike(checkout, python, cache, progress)


@pytest.fixture(scope="session", name="main_like")
def main_like_fixture(tmp_path_factory: pytest.TempPathFactory) -> MainLike:
    """Built once per test run, shared by all xdist workers (tests/shared_session.py)."""
    return build_once(tmp_path_factory, "main-like", build_main_like)


def push_checkout(bare_repo: Path, checkout: Path, work: Path) -> None:
    """Commit the checkout on the remote's `main`, as a maintainer's push would.

    Its objects are stored and sent uncompressed, without deltas: the same commit on a local remote, for 0.6 CPU s
    instead of 3.2 (most of them compressing diffusers' source for the push)."""
    git = ["git", "-c", "user.name=Maintainer", "-c", "user.email=maintainer@example.com"]
    git += ["-c", "core.compression=0", "-c", "pack.window=0"]
    subprocess.run([*git, "clone", "--quiet", str(bare_repo), str(work)], check=True)
    shutil.copytree(checkout, work, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([*git, "add", "-A"], cwd=work, check=True)
    subprocess.run([*git, "commit", "--quiet", "-m", "diffusers, main-like"], cwd=work, check=True)
    subprocess.run([*git, "push", "--quiet", "origin", "HEAD:main"], cwd=work, check=True)
