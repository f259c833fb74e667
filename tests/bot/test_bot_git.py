"""The bot's git: the token stays out of URLs, config and messages; pushes go only to its own branches."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from github_double import GitHubDouble

from bot.github.git import Git, GitError, GitIdentity

TOKEN = "ghs_secret_token_123"


def test_https_remote_gets_the_token_as_a_header_scoped_to_its_origin(tmp_path: Path) -> None:
    git = Git(tmp_path / "clone", "https://github.com/huggingface/diffusers.git", TOKEN)
    basic = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()

    env = {k: v for k, v in git._env.items() if k.startswith("GIT_CONFIG_")}

    assert env == {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.https://github.com/.extraheader",
        "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}",
    }


def test_a_failing_clone_says_so_without_the_token(tmp_path: Path) -> None:
    git = Git(tmp_path / "clone", "http://127.0.0.1:9/huggingface/diffusers.git", TOKEN)

    with pytest.raises(GitError) as raised:
        git.sync("main")

    message = str(raised.value)
    assert message.startswith("git clone failed: ") and "127.0.0.1" in message
    assert TOKEN not in message and base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode() not in message


def test_the_clone_remembers_no_token(github_double: GitHubDouble, tmp_path: Path) -> None:
    git = Git(tmp_path / "clone", str(github_double.bare_repo), TOKEN)

    git.sync("main")

    assert TOKEN not in (tmp_path / "clone" / ".git" / "config").read_text()


def test_push_refuses_any_branch_but_the_bots(github_double: GitHubDouble, tmp_path: Path) -> None:
    git = Git(tmp_path / "clone", str(github_double.bare_repo))
    head = git.sync("main")

    with pytest.raises(ValueError, match="refusing to push to 'main'"):
        git.push(head, "main", expected=head)


def test_commit_replaces_files_without_touching_the_work_tree(github_double: GitHubDouble, tmp_path: Path) -> None:
    git = Git(tmp_path / "clone", str(github_double.bare_repo))
    head = git.sync("main")

    commit = git.commit_files(head, {"README.md": "changed\n"}, "Change\n", GitIdentity())

    assert git.run("show", f"{commit}:README.md") == "changed"
    assert (tmp_path / "clone" / "README.md").read_text() == "# test repository\n"
    assert git.run("status", "--porcelain") == ""
    assert git.run("rev-parse", "HEAD") == head


def test_a_push_and_a_delete_move_the_clones_remote_tracking_branch(
    github_double: GitHubDouble, tmp_path: Path
) -> None:
    git = Git(tmp_path / "clone", str(github_double.bare_repo))
    head = git.sync("main")
    commit = git.commit_files(head, {"README.md": "changed\n"}, "Change\n", GitIdentity())

    git.push(commit, "codemod/change", expected=None)
    # A fresh view of the same clone: what git itself recorded, not what the first remembers.
    pushed = Git(tmp_path / "clone", str(github_double.bare_repo)).remote_sha("codemod/change")
    git.delete_branch("codemod/change", expected=commit)

    assert (pushed, git.remote_sha("codemod/change")) == (commit, None)
    assert Git(tmp_path / "clone", str(github_double.bare_repo)).remote_sha("codemod/change") is None
