"""One version, pyproject's; the install lines name a commit, and an install from git knows its commit."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from codemods import __version__
from codemods.output.rule_docs import TOOL_URL, pip_requirement
from codemods.tool_version import PINNED_COMMIT

ROOT = Path(__file__).resolve().parent.parent
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def readme_pre_commit_config() -> dict:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```yaml\n(repos:\n.*?)```", readme, re.DOTALL)
    assert block is not None, "the README's pre-commit example"
    return yaml.safe_load(block[1])["repos"][0]


def test_the_package_version_is_pyprojects() -> None:
    assert __version__ == VERSION


def test_the_readmes_pre_commit_hook_is_this_repository_at_the_pinned_commit() -> None:
    repo = readme_pre_commit_config()

    assert (repo["repo"], repo["rev"]) == (TOOL_URL, PINNED_COMMIT)


def test_the_readmes_hook_ids_are_the_hooks_files() -> None:
    hooks = [hook["id"] for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())]
    readme = (ROOT / "README.md").read_text()
    named = re.findall(r"- id: ([\w-]+)", readme)

    assert [hook["id"] for hook in readme_pre_commit_config()["hooks"]] == hooks[:1]
    assert named == hooks  # the commented-out alternative too


def test_make_tag_names_the_version_tag() -> None:
    # --no-print-directory: under `make test`, a nested make would print "make[1]: Entering directory" last.
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "tag"], cwd=ROOT, capture_output=True, text=True, check=True
    )

    assert shlex.split(done.stdout.strip().splitlines()[-1]) == [
        "git", "tag", "-a", f"v{VERSION}", "-m", f"diffusers-codemod {VERSION}",
    ]  # fmt: skip


def test_every_install_line_in_the_docs_pins_the_pinned_commit_from_git() -> None:
    pinned = re.compile(rf"""["']diffusers-codemod(\[[a-z,]+\])? @ git\+{re.escape(TOOL_URL)}@{PINNED_COMMIT}["']""")
    paths = ("README.md", "docs/bot.md", "docs/code-scanning.md", "docs/examples/codemod-code-scanning.yml")

    lines = [
        (path, line)
        for path in paths
        for line in (ROOT / path).read_text().splitlines()
        if re.match(r"\s*(run: )?(python -m )?pip install .*diffusers-codemod", line)
    ]

    assert len(lines) >= 4
    assert [(path, line) for path, line in lines if not pinned.search(line)] == []


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """This working tree committed in a scratch repository: the repository and the commit."""
    repo = tmp_path_factory.mktemp("release") / "diffusers-codemod"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True)
    for name in files.stdout.splitlines():
        if (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_bytes((ROOT / name).read_bytes())
    identity = ["-c", "user.name=Release", "-c", "user.email=release@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", *identity, "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", *identity, "commit", "-qm", "release"], cwd=repo, check=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    return repo, sha


def test_the_pip_requirement_installs_this_version_from_a_git_url(released: tuple[Path, str]) -> None:
    # The requirement the PR bodies and the workflow use, pointed at the scratch repository's commit.
    repo, sha = released
    requirement = pip_requirement("bot", sha).replace(f"git+{TOOL_URL}@", f"git+file://{repo}@")
    pip = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--no-deps", "--report", "-"]

    done = subprocess.run([*pip, requirement], capture_output=True, text=True, timeout=600)

    assert done.returncode == 0, done.stderr
    (installed,) = json.loads(done.stdout)["install"]
    assert (installed["metadata"]["name"], installed["metadata"]["version"]) == ("diffusers-codemod", VERSION)
    assert installed["metadata"]["license_expression"] == "Apache-2.0"
    assert installed["requested_extras"] == ["bot"]


def test_an_install_from_a_git_url_prints_the_commit_pip_recorded(tmp_path: Path, released: tuple[Path, str]) -> None:
    repo, sha = released
    # Installed inside another project's work tree, as a `.venv` in a checkout is: that HEAD is not the tool's.
    project = tmp_path / "project"
    identity = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", *identity, "-C", str(project), "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    target = project / ".venv" / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target)]
    subprocess.run([*pip, f"diffusers-codemod @ git+file://{repo}@{sha}"], check=True, capture_output=True, timeout=600)

    # The installed copy first on the path (not a checkout: its commit comes from direct_url.json).
    done = subprocess.run(
        [sys.executable, "-m", "codemod_cli", "--version"], cwd=tmp_path, env={"PYTHONPATH": str(target)},
        capture_output=True, text=True,
    )  # fmt: skip

    assert (done.returncode, done.stdout) == (0, f"codemod {VERSION} (commit {sha})\n"), done.stderr
