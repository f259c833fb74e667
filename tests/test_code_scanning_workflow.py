"""The example code-scanning workflow for a diffusers fork: valid, least privilege, and its scripts work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from codemods.project.index import installed_diffusers
from tools.fixture_cases import find_case

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "docs" / "examples" / "codemod-code-scanning.yml"
PIPELINE = find_case("DIF004/adapter_denoising_loop").input_text()
CHANGED = "src/diffusers/pipelines/t2i_adapter/pipeline_adapter.py"


def workflow() -> dict:
    data = yaml.safe_load(WORKFLOW.read_text())
    data["on"] = data.pop(True)  # YAML 1.1 reads the key `on` as True
    return data


def step(name: str) -> dict:
    return next(s for s in workflow()["jobs"]["codemod"]["steps"] if s.get("name") == name)


def test_example_matches_githubs_workflow_schema() -> None:
    checker = Path(sys.executable).parent / "check-jsonschema"

    done = subprocess.run(
        [str(checker), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)], capture_output=True, text=True
    )

    assert done.returncode == 0, done.stdout + done.stderr


def test_runs_on_pull_requests_with_only_security_events_write() -> None:
    data = workflow()
    job = data["jobs"]["codemod"]

    assert set(data["on"]) == {"pull_request"}
    assert data["permissions"] == {}
    assert job["permissions"] == {"security-events": "write"}
    upload = next(s for s in job["steps"] if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    assert upload["with"]["sarif_file"] == "codemod.sarif"


def git(*args: str, cwd: Path) -> str:
    identity = ["-c", "user.name=Contributor", "-c", "user.email=contributor@example.com"]
    return subprocess.run(["git", *identity, *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def pull_request(tmp_path: Path) -> tuple[Path, str]:
    """A fork's checkout at a PR's head: one changed pipeline file, one changed non-Python file."""
    repo = tmp_path / "diffusers"
    (repo / "src" / "diffusers").mkdir(parents=True)
    (repo / "src" / "diffusers" / "__init__.py").write_text("")
    (repo / "README.md").write_text("fork\n")
    git("init", "--quiet", "-b", "main", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "--quiet", "-m", "base", cwd=repo)
    base = git("rev-parse", "HEAD", cwd=repo).strip()
    (repo / CHANGED).parent.mkdir(parents=True)
    (repo / CHANGED).write_text(PIPELINE)
    (repo / "README.md").write_text("fork, changed\n")
    git("add", "-A", cwd=repo)
    git("commit", "--quiet", "-m", "a pipeline", cwd=repo)
    return repo, base


def run_step(name: str, repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    # GitHub runs `run:` scripts with `bash -e`; the runner's PATH has the installed `codemod`.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    environment = {**os.environ, "PATH": path, "CODEMOD_CACHE_DIR": str(repo.parent / "cache"), **env}
    return subprocess.run(
        ["bash", "-e", "-c", step(name)["run"]], cwd=repo, env=environment, capture_output=True, text=True
    )


def test_the_steps_check_only_the_changed_python_files_into_sarif(pull_request: tuple[Path, str]) -> None:
    repo, base = pull_request
    outputs = repo.parent / "github_output"

    listed = run_step("List the changed Python files", repo, {"BASE_SHA": base, "GITHUB_OUTPUT": str(outputs)})
    # The pipeline stands alone here (this tree has none of diffusers' models; a real checkout's has them).
    checked = run_step("Check them (SARIF)", repo, {"CODEMOD_CONTEXT": str(installed_diffusers())})

    assert listed.returncode == 0, listed.stderr
    assert outputs.read_text() == "count=1\n"
    assert checked.returncode == 0, checked.stderr  # findings remain (exit 1), which the step accepts
    results = json.loads((repo / "codemod.sarif").read_text())["runs"][0]["results"]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert uris == {CHANGED}
    assert sum("fixes" in r for r in results) == 2
