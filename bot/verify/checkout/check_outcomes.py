"""The original tree's repository-check outcomes, kept per checkout commit.

Every fix group of a bot run, and every later run on the same commit, checks the same original
tree: each check (as narrowed to the changed files) runs on it once. Where the checkout is a
clean git work tree, the outcomes are kept on disk by its commit (`~/.cache/diffusers-codemod/
repo-checks`, or `$CODEMOD_CHECK_CACHE`); otherwise by a digest of the tree's files, for this
process only. No torch here.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

from bot.verify.checkout.repo_check_list import RepoCheck

Outcome = tuple[str, str]  # ("passed" | "failed" | "not run", the output's last lines)

# This process's outcomes by `OriginalOutcomes.key`, whatever the checkout.
_KNOWN: dict[str, Outcome] = {}


def check_cache() -> Path:
    configured = os.environ.get("CODEMOD_CHECK_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "diffusers-codemod" / "repo-checks"


def clean_commit(checkout: Path) -> str | None:
    """The commit the checkout's work tree holds; None when it is not a git work tree or a tracked file changed."""
    git = ["git", "-C", str(checkout)]
    head = subprocess.run([*git, "rev-parse", "--verify", "HEAD"], capture_output=True, text=True, check=False)
    if head.returncode != 0:
        return None
    status = subprocess.run(
        [*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, check=False
    )
    return head.stdout.strip() if status.returncode == 0 and not status.stdout.strip() else None


class OriginalOutcomes:
    """The outcomes of checks on the original tree of `checkout`, run by `python` with `ruff` first on PATH."""

    def __init__(self, checkout: Path, tree: Path, python: Path, ruff: str | None) -> None:
        commit = clean_commit(checkout)
        self.state = f"{commit}\0{python}\0{ruff}" if commit else f"{_digest(tree)}\0{checkout.resolve()}\0{python}"
        self.file = check_cache() / f"{commit}.json" if commit else None
        self.on_disk: dict[str, Outcome] = {}
        if self.file is not None and self.file.is_file():
            self.on_disk = {
                key: (outcome, output) for key, (outcome, output) in json.loads(self.file.read_text()).items()
            }

    def key(self, check: RepoCheck) -> str:
        return hashlib.sha256(f"{self.state}\0{check.lines}".encode()).hexdigest()

    def get(self, check: RepoCheck) -> Outcome | None:
        key = self.key(check)
        return _KNOWN.get(key) or self.on_disk.get(key)

    def put(self, check: RepoCheck, outcome: Outcome) -> None:
        key = self.key(check)
        _KNOWN[key] = self.on_disk[key] = outcome
        if self.file is not None:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            written = self.file.with_suffix(f".{os.getpid()}.tmp")
            written.write_text(json.dumps(self.on_disk, indent=1) + "\n")
            written.replace(self.file)


def _digest(tree: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(tree.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(f"\0{path.relative_to(tree)}\0".encode() + path.read_bytes())
    return digest.hexdigest()
