"""The hooks, run by the real `pre-commit` tool on a real commit in a scratch repository."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_version_scheme import readme_pre_commit_config

from codemods.project.index import installed_diffusers
from tools.fixture_cases import find_case

PROJECT = Path(__file__).resolve().parent.parent
EXAMPLE = find_case("DIF004/autoencoder_self_decode").input_text()
# What DIF004 makes of it where the project opts in to a model's reads of its own methods.
FIXED = EXAMPLE.replace("self._decode(z_slice).sample", "self._decode(z_slice, return_dict=False)[0]").replace(
    "self._decode(z).sample", "self._decode(z, return_dict=False)[0]"
)


def git(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def _repository(path: Path) -> Path:
    path.mkdir()
    git("init", "-q", "-b", "main", cwd=path)
    git("config", "user.email", "dev@example.invalid", cwd=path)
    git("config", "user.name", "Dev", cwd=path)
    return path


@pytest.fixture(scope="module")
def hook_repository(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """This project's working tree as a committed git repository that pre-commit can install from."""
    repo = _repository(tmp_path_factory.mktemp("hooks") / "diffusers-codemod")
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy(PROJECT / name, repo / name)
    for package in ("codemod_cli", "codemods", "bot"):
        shutil.copytree(PROJECT / package, repo / package, ignore=shutil.ignore_patterns("__pycache__"))
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "hooks", cwd=repo)
    return repo, git("rev-parse", "HEAD", cwd=repo).stdout.strip()


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


def _project(tmp_path: Path, hook_repository: tuple[Path, str], hook_id: str) -> Path:
    repo, rev = hook_repository
    project = _repository(tmp_path / "project")
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {repo}\n    rev: {rev}\n    hooks:\n      - id: {hook_id}\n"
    )
    # The example is a model reading its own `_decode`: DIF004 fixes that where the project opts in.
    (project / "pyproject.toml").write_text('[tool.codemod]\nopt-in = ["DIF004-self-calls"]\n')
    git("add", ".pre-commit-config.yaml", "pyproject.toml", cwd=project)
    git("commit", "-qm", "config", "--no-verify", cwd=project)
    return project


def _commit(project: Path, home: Path, message: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=project, env=env, check=True, capture_output=True)
    # git shows the hooks' output on its stderr; merge the two for the assertions.
    return subprocess.run(
        ["git", "commit", "-m", message], cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def test_the_fixing_hook_stops_the_commit_and_fixes_the_file(
    tmp_path: Path, hook_repository: tuple[Path, str], pre_commit_home: Path
) -> None:
    project = _project(tmp_path, hook_repository, "diffusers-codemod")
    (project / "autoencoder.py").write_text(EXAMPLE)
    git("add", "autoencoder.py", cwd=project)

    stopped = _commit(project, pre_commit_home, "add autoencoder")
    assert stopped.returncode != 0, stopped.stdout
    assert "files were modified by this hook" in stopped.stdout
    assert (project / "autoencoder.py").read_text() == FIXED
    assert git("log", "--format=%s", cwd=project).stdout.split() == ["config"]

    git("add", "autoencoder.py", cwd=project)
    passed = _commit(project, pre_commit_home, "add autoencoder")
    assert passed.returncode == 0, passed.stdout
    assert "Passed" in passed.stdout


def test_the_check_hook_reports_without_changing_and_a_clean_file_passes(
    tmp_path: Path, hook_repository: tuple[Path, str], pre_commit_home: Path
) -> None:
    project = _project(tmp_path, hook_repository, "diffusers-codemod-check")
    (project / "autoencoder.py").write_text(EXAMPLE)
    git("add", "autoencoder.py", cwd=project)
    stopped = _commit(project, pre_commit_home, "add autoencoder")
    assert stopped.returncode != 0
    assert "autoencoder.py:29:31: DIF004 [*] `.sample` read off `self._decode(...)`" in stopped.stdout
    assert (project / "autoencoder.py").read_text() == EXAMPLE

    (project / "autoencoder.py").write_text(FIXED)
    git("add", "autoencoder.py", cwd=project)
    passed = _commit(project, pre_commit_home, "add autoencoder")
    assert passed.returncode == 0, passed.stdout


def test_the_readmes_hook_at_its_pinned_sha_runs_from_this_repository(tmp_path: Path, pre_commit_home: Path) -> None:
    # The README's own config, its `repo:` pointed at this repository: pre-commit fetches the pinned SHA
    # (a tag such as `v0.1.0`, never pushed, made it exit 3) and installs the hooks as they were there.
    config = readme_pre_commit_config()
    project = _project(tmp_path, (PROJECT, config["rev"]), "diffusers-codemod-check")
    (project / "autoencoder.py").write_text(EXAMPLE)
    git("add", "autoencoder.py", cwd=project)

    stopped = _commit(project, pre_commit_home, "add autoencoder")

    assert stopped.returncode == 1, stopped.stdout
    assert "autoencoder.py:29:31: DIF004 [*] `.sample` read off `self._decode(...)`" in stopped.stdout


def _findings_in(output: str) -> list[str]:
    return re.findall(r"^pipeline_dit\.py:\d+:\d+: DIF\d+", output, re.MULTILINE)


def test_the_hook_and_the_command_line_find_the_same_in_a_lone_pipeline_file(
    tmp_path: Path, hook_repository: tuple[Path, str], pre_commit_home: Path
) -> None:
    # The hook's environment has no diffusers; this test's Python has one, which the command line reads
    # only when `--context` names it. Reading it unasked, the command line found 3 DIF004 here and the hook 0.
    project = _project(tmp_path, hook_repository, "diffusers-codemod-check")
    shutil.copy(installed_diffusers() / "pipelines" / "dit" / "pipeline_dit.py", project / "pipeline_dit.py")
    git("add", "pipeline_dit.py", cwd=project)
    hook = _commit(project, pre_commit_home, "add a pipeline")
    env = {key: value for key, value in os.environ.items() if key != "CODEMOD_CONTEXT"}
    cli = subprocess.run(
        [sys.executable, "-m", "codemod_cli", "run", "--check", "--no-cache", "pipeline_dit.py"],
        cwd=project, env=env, capture_output=True, text=True,
    )
    assert "Passed" in hook.stdout and cli.returncode == 0, (hook.stdout, cli.stderr)
    assert _findings_in(hook.stdout) == _findings_in(cli.stdout) == []
