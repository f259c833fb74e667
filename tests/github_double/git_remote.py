"""The double's "remote": a local bare git repository that tests push to with real git.

GitHub only lets a pull request name a head branch that exists on the remote, and reports
the branch's current commit as `head.sha`; the double asks this bare repository the same.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

# Fixed identity and dates keep commits reproducible and independent of the machine's git config.
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Double Tester",
    "GIT_AUTHOR_EMAIL": "tester@example.com",
    "GIT_COMMITTER_NAME": "Double Tester",
    "GIT_COMMITTER_EMAIL": "tester@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
}

_HEADS = "refs/heads/"


def _git(*args: str, cwd: Path | None = None) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, env=_GIT_ENV, check=True, capture_output=True, text=True)
    return result.stdout.strip()


class GitRemote:
    """Read-only view of a bare repository, as GitHub sees the branches pushed to it."""

    def __init__(self, bare_repo: Path) -> None:
        self.bare_repo = bare_repo

    def branch_heads(self) -> dict[str, str]:
        """Every branch name mapped to the commit it points at.

        Read from the ref files as git reads them (packed refs, overridden by loose ones), not by a git process:
        the double asks on most requests, and a process each was a tenth of the bot tests' git processes.
        """
        heads: dict[str, str] = {}
        packed = self.bare_repo / "packed-refs"
        for line in packed.read_text().splitlines() if packed.is_file() else ():
            sha, _, ref = line.partition(" ")
            if ref.startswith(_HEADS):
                heads[ref.removeprefix(_HEADS)] = sha
        loose = self.bare_repo / _HEADS
        # A push may delete a branch (and its folder) while we read: os.walk skips a folder that is gone.
        for folder, _, names in os.walk(loose):
            for name in names:
                if name.endswith(".lock"):  # git writes `<name>.lock`, then renames it into place
                    continue
                path = Path(folder, name)
                with contextlib.suppress(FileNotFoundError):
                    heads[path.relative_to(loose).as_posix()] = path.read_text().strip()
        return heads

    def head_sha(self, branch: str) -> str | None:
        return self.branch_heads().get(branch)

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """True when `descendant` adds no commits over `ancestor`'s history (GitHub's "No commits between")."""
        result = subprocess.run(
            ["git", "--git-dir", str(self.bare_repo), "merge-base", "--is-ancestor", ancestor, descendant],
            env=_GIT_ENV,
            capture_output=True,
        )
        return result.returncode == 0


def create_bare_remote(
    bare_repo: Path, default_branch: str = "main", files: Callable[[], dict[str, str]] | None = None
) -> GitRemote:
    """Make a bare repository whose default branch holds one commit, like a freshly created GitHub repo, and a
    second one of `files()` where given."""
    shutil.copytree(_fresh_remote(default_branch, files), bare_repo)
    return GitRemote(bare_repo)


@functools.cache
def _fresh_remote(default_branch: str, files: Callable[[], dict[str, str]] | None) -> Path:
    """A fresh remote, made once per process and copied for each test: making one takes five git processes, and
    pushing `files()` seven more."""
    scratch = Path(tempfile.mkdtemp(prefix="github-double-remote-"))
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    bare_repo = scratch / "remote.git"
    _git("init", "--bare", "--quiet", f"--initial-branch={default_branch}", str(bare_repo))
    seed = scratch / "seed"
    _git("clone", "--quiet", str(bare_repo), str(seed))
    (seed / "README.md").write_text("# test repository\n")
    _git("add", "README.md", cwd=seed)
    _git("commit", "--quiet", "-m", "Initial commit", cwd=seed)
    _git("push", "--quiet", "origin", f"HEAD:refs/heads/{default_branch}", cwd=seed)
    if files is not None:
        push_branch(bare_repo, default_branch, files(), base=default_branch)
    return bare_repo


def push_branch(bare_repo: Path, branch: str, files: dict[str, str], base: str = "main") -> str:
    """Commit `files` on top of `branch` (or `base` for a new branch) and push; returns the new commit."""
    return push_branches(bare_repo, [branch], files, base)


def push_branches(bare_repo: Path, branches: list[str], files: dict[str, str], base: str = "main") -> str:
    """One commit of `files`, pushed to every branch in `branches` in a single push; returns the commit.

    The commit builds on the first branch if the remote has it, else on `base`.
    """
    work = bare_repo.parent / f"{bare_repo.name}-work"
    if not work.exists():
        _git("clone", "--quiet", str(bare_repo), str(work))
    _git("fetch", "--quiet", "origin", cwd=work)
    start = f"origin/{branches[0]}" if GitRemote(bare_repo).head_sha(branches[0]) else f"origin/{base}"
    _git("checkout", "--quiet", "--detach", start, cwd=work)
    for name, content in files.items():
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    _git("add", "--", *files, cwd=work)  # one git process, not one per file: a test's set-up pushes dozens
    _git("commit", "--quiet", "-m", f"Update {', '.join(branches)}", cwd=work)
    # Forced: the other branches may already exist elsewhere, and the caller wants them all on this commit.
    _git("push", "--quiet", "--force", "origin", *(f"HEAD:refs/heads/{branch}" for branch in branches), cwd=work)
    return _git("rev-parse", "HEAD", cwd=work)
