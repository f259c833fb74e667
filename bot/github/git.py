"""Real git for the bot: clone or update the target, build one commit per fix group, push.

The token never appears in a URL or an argument: for http(s) remotes it travels as an
`http.<origin>/.extraheader` set through git's `GIT_CONFIG_*` environment variables, and any
git output that reaches a message is redacted. Commits are built with plumbing (a private
index), so the work tree stays at the base commit the engine and the verifier read.
"""

from __future__ import annotations

import base64
import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

BOT_BRANCH_PREFIX = "codemod/"


@dataclass(frozen=True)
class GitIdentity:
    """Who the bot's commits are by; a commit on a bot branch by anyone else is a human's."""

    name: str = "diffusers-codemod[bot]"
    email: str = "codemod-bot@users.noreply.github.com"


class GitError(Exception):
    """A git command failed; the message is redacted and says which command."""


class PushRejected(GitError):
    """The remote refused the push (a hook, branch protection, or a stale lease)."""


@dataclass(frozen=True)
class ForeignCommit:
    sha: str
    author: str  # "Name <email>"


class Git:
    """One clone of the target repository, under `root`, whose `origin` is `clone_url`."""

    def __init__(self, root: Path, clone_url: str, token: str | None = None) -> None:
        self.root = root
        self.clone_url = clone_url
        self._token = token
        self._env = _git_env(clone_url, token)
        # `origin/<branch>` -> commit, read in one git process after each fetch: the bot asks per group.
        self._remote_heads: dict[str, str] | None = None

    # Plumbing

    def run(
        self, *args: str, input: bytes | None = None, env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> str:
        result = subprocess.run(
            ["git", *args],
            cwd=cwd or self.root,
            env={**self._env, **(env or {})},
            input=input,
            capture_output=True,
            check=False,
        )
        if result.returncode != 0:
            output = (result.stdout + result.stderr).decode("utf-8", "replace").strip()
            raise GitError(f"git {args[0]} failed: {self.redact(output)}")
        return result.stdout.decode("utf-8", "replace").strip()

    def redact(self, text: str) -> str:
        for secret in _secrets(self._token):
            text = text.replace(secret, "***")
        return text

    # Clone, update, read

    def sync(self, base: str) -> str:
        """Clone (first run) or fetch, then check out `origin/<base>` detached and clean; returns its commit."""
        if not (self.root / ".git").is_dir():
            self.root.parent.mkdir(parents=True, exist_ok=True)
            partial = ["--filter=blob:none"] if urlsplit(self.clone_url).scheme in ("http", "https") else []
            self.run(
                "clone",
                "--quiet",
                "--no-tags",
                "--no-checkout",
                *partial,
                self.clone_url,
                str(self.root),
                cwd=self.root.parent,
            )
        else:
            self.run("remote", "set-url", "origin", self.clone_url)
            self.run("fetch", "--quiet", "--prune", "--no-tags", "origin")
        self._remote_heads = None
        base_sha = self.remote_sha(base)
        if base_sha is None:
            raise GitError(f"the base branch {base!r} is not on {self.clone_url}")
        self._check_out(base_sha)
        return base_sha

    def checkout(self, revision: str) -> str:
        """Check out `revision` detached, dropping local edits and untracked files; returns its commit."""
        if not self.has_commit(revision):
            self.run("fetch", "--quiet", "--no-tags", "origin", revision)
        self._check_out(revision)
        return self.run("rev-parse", "HEAD")

    def _check_out(self, revision: str) -> None:
        self.run("checkout", "--quiet", "--force", "--detach", revision)
        self.run("clean", "--quiet", "-ffdx")

    def has_commit(self, revision: str) -> bool:
        try:
            self.run("cat-file", "-e", f"{revision}^{{commit}}")
        except GitError:
            return False
        return True

    def remote_sha(self, branch: str) -> str | None:
        """The commit `origin/<branch>` pointed at when last fetched (or pushed from here)."""
        if self._remote_heads is None:
            listing = self.run("for-each-ref", "--format=%(refname:lstrip=3) %(objectname)", "refs/remotes/origin/")
            self._remote_heads = dict(line.rsplit(" ", 1) for line in listing.splitlines())
        return self._remote_heads.get(branch)

    def fork_point(self, base: str, branch: str) -> str:
        """The commit of `base` that `branch` was built on (their merge base)."""
        return self.run("merge-base", base, branch)

    def changed_files(self, old: str, new: str, paths: Sequence[str] = ()) -> list[str]:
        """Repository-relative files that differ between two commits; only among `paths` when given."""
        return self.run("diff", "--name-only", old, new, *(("--", *paths) if paths else ())).splitlines()

    def foreign_commits(self, base: str, branch: str, identity: GitIdentity) -> list[ForeignCommit]:
        """Commits on `origin/<branch>` but not on `origin/<base>` that the bot did not both author and commit."""
        listing = self.run(
            "log", "--format=%H%x00%an <%ae>%x00%ae%x00%ce", f"refs/remotes/origin/{base}..refs/remotes/origin/{branch}"
        )
        foreign = []
        for line in listing.splitlines():
            sha, author, author_email, committer_email = line.split("\x00")
            if author_email != identity.email or committer_email != identity.email:
                foreign.append(ForeignCommit(sha, author))
        return foreign

    # Write

    def commit_files(self, parent: str, files: dict[str, str], message: str, identity: GitIdentity) -> str:
        """A commit on `parent` with `files` (repository-relative paths) replaced; the work tree is untouched."""
        with tempfile.TemporaryDirectory(prefix="codemod-index-") as scratch:
            index = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            self.run("read-tree", parent, env=index)
            for path, text in sorted(files.items()):
                blob = self.run("hash-object", "-w", "--stdin", input=text.encode("utf-8"))
                self.run("update-index", "--add", "--cacheinfo", f"{self._mode(parent, path)},{blob},{path}", env=index)
            tree = self.run("write-tree", env=index)
        people = {
            "GIT_AUTHOR_NAME": identity.name,
            "GIT_AUTHOR_EMAIL": identity.email,
            "GIT_COMMITTER_NAME": identity.name,
            "GIT_COMMITTER_EMAIL": identity.email,
        }
        return self.run("commit-tree", tree, "-p", parent, "-F", "-", input=message.encode("utf-8"), env=people)

    def push(self, commit: str, branch: str, expected: str | None) -> None:
        """Push `commit` to the bot's `branch`, only if the remote branch is still `expected` (None: absent)."""
        ref = f"refs/heads/{self._own_branch(branch)}"
        lease = f"--force-with-lease={ref}:{expected or ''}"
        try:
            # The clone's fetch refspec maps the branch, so a push that lands also moves `origin/<branch>`.
            self.run("push", "--porcelain", lease, "origin", f"{commit}:{ref}")
        except GitError as error:
            raise PushRejected(_push_reason(str(error))) from None
        if self._remote_heads is not None:
            self._remote_heads[branch] = commit

    def delete_branch(self, branch: str, expected: str) -> None:
        """Delete the bot's remote `branch`, only if it still points at `expected` (nobody pushed since)."""
        ref = f"refs/heads/{self._own_branch(branch)}"
        try:
            self.run("push", "--porcelain", f"--force-with-lease={ref}:{expected}", "origin", f":{ref}")
        except GitError as error:
            raise PushRejected(_push_reason(str(error))) from None
        if self._remote_heads is not None:
            self._remote_heads.pop(branch, None)

    @staticmethod
    def _own_branch(branch: str) -> str:
        if not branch.startswith(BOT_BRANCH_PREFIX):
            raise ValueError(
                f"refusing to push to {branch!r}: the bot pushes only to its own {BOT_BRANCH_PREFIX}* branches"
            )
        return branch

    def _mode(self, parent: str, path: str) -> str:
        listing = self.run("ls-tree", parent, "--", path)
        return listing.split()[0] if listing else "100644"


def _secrets(token: str | None) -> list[str]:
    if not token:
        return []
    return [token, base64.b64encode(f"x-access-token:{token}".encode()).decode()]


def _git_env(clone_url: str, token: str | None) -> dict[str, str]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    for key in [k for k in env if k.startswith("GIT_CONFIG_")]:
        del env[key]
    url = urlsplit(clone_url)
    if token and url.scheme in ("http", "https"):
        # What actions/checkout does: basic auth with the token, scoped to the remote's origin.
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        env.update(
            GIT_CONFIG_COUNT="1",
            GIT_CONFIG_KEY_0=f"http.{url.scheme}://{url.netloc}/.extraheader",
            GIT_CONFIG_VALUE_0=f"AUTHORIZATION: basic {basic}",
        )
    return env


def _push_reason(message: str) -> str:
    """The line of `git push --porcelain` that says why, e.g. `[remote rejected] (pre-receive hook declined)`."""
    for line in message.splitlines():
        if line.startswith("!") and "\t" in line:
            return line.rsplit("\t", 1)[-1].strip()
    return message.removeprefix("git push failed: ").strip().splitlines()[-1] if message.strip() else "push failed"
