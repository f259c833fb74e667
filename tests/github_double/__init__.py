"""A GitHub REST API double for end-to-end tests of the PR bot through real PyGithub.

Start it with the `github_double` fixture (import `github_double_fixture` into the test module) or as a context
manager around `GitHubDouble(bare_repo)`; push branches to its remote with `push_branch`.
"""

from .double import GitHubDouble, github_double_fixture
from .faults import Fault
from .git_remote import GitRemote, create_bare_remote, push_branch, push_branches
from .model import Account, Comment, Issue, Label, PullRequest
from .server import RecordedRequest

__all__ = [
    "Account",
    "Comment",
    "Fault",
    "GitHubDouble",
    "GitRemote",
    "Issue",
    "Label",
    "PullRequest",
    "RecordedRequest",
    "create_bare_remote",
    "github_double_fixture",
    "push_branch",
    "push_branches",
]
