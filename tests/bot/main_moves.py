"""How `main` moves between two bot runs in the tests, as a maintainer moves it, on the bare remote."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bot_harness import show
from github_double import GitHubDouble, push_branch
from github_double.model import PullRequest


def pull_on(remote: GitHubDouble, branch: str) -> PullRequest:
    return next(p for p in remote.pull_requests() if p.head_ref == branch)


def apply_by_hand(remote: GitHubDouble, branch: str, path: str) -> str:
    """A maintainer commits the bot's change of `path` to main themselves; returns that commit."""
    return push_branch(remote.bare_repo, "main", {path: show(remote.bare_repo, branch, path)})


def edit_main(remote: GitHubDouble, path: str, old: str, new: str) -> str:
    text = show(remote.bare_repo, "main", path)
    assert old in text
    return push_branch(remote.bare_repo, "main", {path: text.replace(old, new, 1)})


def shift_down(remote: GitHubDouble, path: str) -> str:
    """An unrelated edit above every fix in `path`: two lines more at the top."""
    return push_branch(
        remote.bare_repo, "main", {path: "# Maintained by hand.\n\n" + show(remote.bare_repo, "main", path)}
    )


def parent_of(bare_repo: Path, branch: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(bare_repo), "rev-parse", f"{branch}^"], capture_output=True, text=True, check=True
    ).stdout.strip()
