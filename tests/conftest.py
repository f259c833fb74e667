import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# On 2 shared cores, two torch threads give 100x latency spikes.
os.environ.setdefault("OMP_NUM_THREADS", "1")

from github_double import github_double_fixture  # noqa: E402,F401  (the `github_double` fixture)
from main_like import main_like_fixture  # noqa: E402,F401  (the `main_like` fixture)
from shared_session import build_once  # noqa: E402

from codemods.engine import Mode, RunOptions, RunResult, run  # noqa: E402
from codemods.project import installed_diffusers  # noqa: E402
from tools.checkout_layout import write_checkout_config  # noqa: E402


def pytest_addoption(parser):
    parser.addoption(
        "--regen-fixtures",
        action="store_true",
        help="Rewrite fixtures' expected outputs from the current rules (review the diff before committing).",
    )


@dataclass(frozen=True)
class DiffusersTrees:
    """A pristine copy of the installed diffusers and one rewritten by every rule (unsafe fixes included).

    The rewritten copy is laid out as a checkout (`<checkout>/src/diffusers`, diffusers' ruff settings
    and formatter pin beside it), so the run goes through the formatter gate as a user's would.
    """

    original: Path  # parent directory holding `diffusers/`
    rewritten: Path  # `<checkout>/src`
    result: RunResult

    def changed_files(self) -> list[str]:
        """Paths relative to the package (`models/x.py`) of the files the run changed."""
        root = self.rewritten / "diffusers"
        return sorted(str(Path(p).relative_to(root)) for p in self.result.changes)


def copy_installed_diffusers(destination: Path) -> Path:
    shutil.copytree(installed_diffusers(), destination / "diffusers", ignore=shutil.ignore_patterns("__pycache__"))
    return destination


def build_diffusers_trees(directory: Path) -> DiffusersTrees:
    original = copy_installed_diffusers(directory / "original")
    (directory / "checkout").mkdir()
    checkout = write_checkout_config(directory / "checkout")
    rewritten = copy_installed_diffusers(checkout / "src")
    result = run(RunOptions(paths=(rewritten / "diffusers",), mode=Mode.WRITE, unsafe_fixes=True))
    return DiffusersTrees(original, rewritten, result)


@pytest.fixture(scope="session")
def diffusers_trees(tmp_path_factory: pytest.TempPathFactory) -> DiffusersTrees:
    """Built once per test run, shared by all xdist workers: tests read these trees and never change them."""
    return build_once(tmp_path_factory, "diffusers-trees", build_diffusers_trees)


def run_python_in_tree(tree: Path, code: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter that imports diffusers from `tree` (never two diffusers in one process)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, text=True, timeout=timeout
    )
