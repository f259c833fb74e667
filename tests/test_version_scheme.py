"""One version, one tag scheme: pyproject's version, tagged `vX.Y.Z`, is what every pin in the docs names."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

from codemods import __version__
from codemods.output.rule_docs import TOOL_URL, pip_requirement

ROOT = Path(__file__).resolve().parent.parent
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def readme_pre_commit_config() -> dict:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```yaml\n(repos:\n.*?)```", readme, re.DOTALL)
    assert block is not None, "the README's pre-commit example"
    return yaml.safe_load(block[1])["repos"][0]


def test_the_package_version_is_pyprojects() -> None:
    assert __version__ == VERSION


def test_the_readmes_pre_commit_rev_is_the_version_tag_of_this_repository() -> None:
    repo = readme_pre_commit_config()

    assert repo["rev"] == f"v{VERSION}"
    assert repo["repo"] == TOOL_URL


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


def test_every_install_line_in_the_docs_pins_the_version_tag_from_git() -> None:
    pinned = re.compile(rf"""["']diffusers-codemod(\[[a-z,]+\])? @ git\+{re.escape(TOOL_URL)}@v{re.escape(VERSION)}["']""")
    paths = ("README.md", "docs/bot.md", "docs/code-scanning.md", "docs/examples/codemod-code-scanning.yml")

    lines = [
        (path, line)
        for path in paths
        for line in (ROOT / path).read_text().splitlines()
        if re.match(r"\s*(run: )?(python -m )?pip install .*diffusers-codemod", line)
    ]

    assert len(lines) >= 4
    assert [(path, line) for path, line in lines if not pinned.search(line)] == []


def test_the_pip_requirement_installs_this_version_from_a_git_url(tmp_path: Path) -> None:
    # The requirement the PR bodies and the workflow use, pointed at a local clone of this tree at one commit.
    repo = tmp_path / "diffusers-codemod"
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
    requirement = pip_requirement("bot").replace(f"git+{TOOL_URL}@v{VERSION}", f"git+file://{repo}@{sha}")
    pip = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--no-deps", "--report", "-"]

    done = subprocess.run([*pip, requirement], capture_output=True, text=True, timeout=600)

    assert done.returncode == 0, done.stderr
    (installed,) = json.loads(done.stdout)["install"]
    assert (installed["metadata"]["name"], installed["metadata"]["version"]) == ("diffusers-codemod", VERSION)
    assert installed["metadata"]["license_expression"] == "Apache-2.0"
    assert installed["requested_extras"] == ["bot"]
