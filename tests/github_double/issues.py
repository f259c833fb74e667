"""The rules GitHub enforces on issues, over the same state (and lock) as `HostedRepository`.

On GitHub every pull request is also an issue: `GET /issues` lists both (pull requests with a
`pull_request` key), and labels, comments and `PATCH /issues/{n}` work on either.
"""

from __future__ import annotations

from .errors import ApiError, error_body, field_error, not_found, validation_failed
from .model import Account, Issue, PullRequest
from .repository import HostedRepository

ISSUES_DOCS = "https://docs.github.com/rest/issues"
CREATE_ISSUE_DOCS = "https://docs.github.com/rest/issues/issues#create-an-issue"
UPDATE_ISSUE_DOCS = "https://docs.github.com/rest/issues/issues#update-an-issue"
LIST_ISSUES_DOCS = "https://docs.github.com/rest/issues/issues#list-repository-issues"
STATE_REASONS = ("completed", "not_planned", "reopened")


class HostedIssues:
    def __init__(self, repository: HostedRepository) -> None:
        self.repository = repository
        self.state = repository.state
        self.lock = repository.lock

    def require_issues(self) -> None:
        """GitHub answers 410 Gone on the issue endpoints of a repository whose issues are turned off."""
        if not self.state.has_issues:
            raise ApiError(410, error_body(410, "Issues are disabled for this repo", ISSUES_DOCS))

    def create(self, author: Account, title: str | None, body: str | None, labels: list[str]) -> Issue:
        with self.lock:
            self.require_issues()
            if not title:
                raise validation_failed(CREATE_ISSUE_DOCS, field_error("Issue", "title", "missing_field"))
            issue = Issue(self.state.next_number(), self.repository.ids.next(), title, body, author)
            self.state.issues[issue.number] = issue
            self.repository.add_labels(issue.number, labels)
            return issue

    def issue(self, number: int) -> Issue:
        with self.lock:
            self.require_issues()
            if number not in self.state.issues:
                raise not_found()
            return self.state.issues[number]

    def edit(
        self,
        number: int,
        by: Account,
        title: str | None = None,
        body: str | None = None,
        state: str | None = None,
        state_reason: str | None = None,
        labels: list[str] | None = None,
    ) -> Issue | PullRequest:
        """`PATCH /issues/{n}`: an issue, or the issue side of a pull request (title, body, state, labels)."""
        with self.lock:
            if number in self.state.pulls:
                self.repository.edit_pull(number, title=title, body=body, state=state)
                if labels is not None:
                    self.repository.set_labels(number, labels)
                return self.repository.pull(number)
            issue = self.issue(number)
            if state is not None and state not in ("open", "closed"):
                raise validation_failed(UPDATE_ISSUE_DOCS, field_error("Issue", "state", "invalid"))
            if state_reason is not None and state_reason not in STATE_REASONS:
                raise validation_failed(UPDATE_ISSUE_DOCS, field_error("Issue", "state_reason", "invalid"))
            if state == "closed" and issue.state == "open":
                issue.close(by, state_reason or "completed")
            elif state == "open" and issue.state == "closed":
                issue.reopen()
            if title is not None:
                issue.title = title
            if body is not None:
                issue.body = body
            if labels is not None:
                self.repository.set_labels(number, labels)
            issue.touch()
            return issue

    def listing(
        self,
        state: str = "open",
        creator: str | None = None,
        labels: str | None = None,
        sort: str = "created",
        direction: str = "desc",
    ) -> list[Issue | PullRequest]:
        """`GET /issues`: issues and pull requests together, as GitHub lists them."""
        with self.lock:
            self.require_issues()
            if state not in ("open", "closed", "all"):
                raise validation_failed(LIST_ISSUES_DOCS, field_error("Issue", "state", "invalid"))
            sort_keys = {
                "created": lambda i: (i.created_at, i.number),
                "updated": lambda i: (i.updated_at, i.number),
                "comments": lambda i: (len(i.comments), i.number),
            }
            if sort not in sort_keys:
                raise validation_failed(LIST_ISSUES_DOCS, field_error("Issue", "sort", "invalid"))
            items: list[Issue | PullRequest] = [*self.state.issues.values(), *self.state.pulls.values()]
            if state != "all":
                items = [i for i in items if i.state == state]
            if creator:
                items = [i for i in items if i.author.login.lower() == creator.lower()]
            for name in filter(None, (labels or "").split(",")):
                items = [i for i in items if any(label.name.lower() == name.strip().lower() for label in i.labels)]
            items.sort(key=sort_keys[sort], reverse=direction == "desc")
            return items
