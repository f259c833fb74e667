"""What the double remembers: accounts, labels, comments, pull requests and issues of one repository."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import datetime, timezone


def now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class Account:
    login: str
    id: int
    type: str = "User"  # GitHub also says "Bot" (apps) and "Organization"


@dataclass
class Label:
    id: int
    name: str
    color: str
    description: str | None = None
    default: bool = False


@dataclass
class Comment:
    id: int
    issue_number: int
    author: Account
    body: str
    created_at: datetime = field(default_factory=now)
    updated_at: datetime = field(default_factory=now)


@dataclass
class PullRequest:
    number: int
    id: int
    issue_id: int  # a pull request is also an issue, with an id of its own
    title: str
    body: str | None
    author: Account
    head_owner: Account
    head_ref: str
    head_sha: str
    base_ref: str
    base_sha: str
    draft: bool = False
    maintainer_can_modify: bool = False
    state: str = "open"
    merged: bool = False
    merged_by: Account | None = None
    merge_commit_sha: str | None = None
    labels: list[Label] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    created_at: datetime = field(default_factory=now)
    updated_at: datetime = field(default_factory=now)
    closed_at: datetime | None = None
    merged_at: datetime | None = None

    @property
    def head_label(self) -> str:
        return f"{self.head_owner.login}:{self.head_ref}"

    def touch(self) -> None:
        self.updated_at = now()

    def close(self) -> None:
        self.state = "closed"
        self.closed_at = now()
        self.touch()

    def merge(self, by: Account) -> None:
        self.close()
        self.merged = True
        self.merged_by = by
        self.merged_at = self.closed_at
        # The double does not write a merge commit to the remote; the head commit stands in for it.
        self.merge_commit_sha = self.head_sha


@dataclass
class Issue:
    """An issue proper (not a pull request); it shares the number sequence with pull requests."""

    number: int
    id: int
    title: str
    body: str | None
    author: Account
    state: str = "open"
    state_reason: str | None = None  # "completed" or "not_planned" once closed; "reopened" after
    closed_by: Account | None = None
    labels: list[Label] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    created_at: datetime = field(default_factory=now)
    updated_at: datetime = field(default_factory=now)
    closed_at: datetime | None = None

    def touch(self) -> None:
        self.updated_at = now()

    def close(self, by: Account, reason: str = "completed") -> None:
        self.state, self.state_reason, self.closed_by, self.closed_at = "closed", reason, by, now()
        self.touch()

    def reopen(self) -> None:
        self.state, self.state_reason, self.closed_by, self.closed_at = "open", "reopened", None, None
        self.touch()


class IdSource:
    """GitHub ids are unique across object kinds; one counter keeps the double honest about that."""

    def __init__(self, start: int = 1_000_000) -> None:
        self._counter = itertools.count(start)

    def next(self) -> int:
        return next(self._counter)


@dataclass
class RepositoryState:
    """Everything one hosted repository holds; guarded by the server's lock, not its own."""

    owner: Account
    name: str
    default_branch: str
    id: int
    created_at: datetime = field(default_factory=now)
    pulls: dict[int, PullRequest] = field(default_factory=dict)
    labels: dict[str, Label] = field(default_factory=dict)  # keyed by lower-cased name, as GitHub matches them
    issues: dict[int, Issue] = field(default_factory=dict)
    has_issues: bool = True  # forks start with issues turned off

    @property
    def full_name(self) -> str:
        return f"{self.owner.login}/{self.name}"

    def next_number(self) -> int:
        # Issues and pull requests share one sequence.
        return max((*self.pulls, *self.issues), default=0) + 1
