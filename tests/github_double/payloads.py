"""GitHub's JSON shapes for the double's objects.

PyGithub reads these lazily: a field missing from a list item makes it GET the object's `url`,
so list and single-object shapes differ here exactly where GitHub's do (`merged`, `comments`,
`maintainer_can_modify` only come with a single pull request).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote

from .model import Account, Comment, Issue, Label, PullRequest, RepositoryState


def timestamp(moment: datetime | None) -> str | None:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None


class Renderer:
    """Turns model objects into response bodies whose URLs point back at the double."""

    def __init__(self, api_url: str, repository: RepositoryState, clone_url: str) -> None:
        self.api_url = api_url
        self.repository = repository
        self.clone_url = clone_url

    # URL roots; html URLs also point at the double (which answers 404) so nothing leaks to github.com.
    @property
    def repo_api(self) -> str:
        return f"{self.api_url}/repos/{self.repository.full_name}"

    @property
    def repo_html(self) -> str:
        return f"{self.api_url}/{self.repository.full_name}"

    def user(self, account: Account) -> dict[str, Any]:
        return {
            "login": account.login,
            "id": account.id,
            "node_id": f"U_double{account.id}",
            "avatar_url": f"{self.api_url}/avatars/{account.login}",
            "url": f"{self.api_url}/users/{account.login}",
            "html_url": f"{self.api_url}/{account.login}",
            "type": account.type,
            "site_admin": False,
        }

    def repo(self, owner: Account | None = None) -> dict[str, Any]:
        """The hosted repository, or the fork of it that `owner` pushes branches to."""
        upstream = self.repository
        owner = owner or upstream.owner
        is_fork = owner.login != upstream.owner.login
        full_name = f"{owner.login}/{upstream.name}"
        return {
            "id": upstream.id + owner.id if is_fork else upstream.id,
            "node_id": f"R_double{upstream.id}{owner.id}",
            "name": upstream.name,
            "full_name": full_name,
            "owner": self.user(owner),
            "private": False,
            "html_url": f"{self.api_url}/{full_name}",
            "description": None,
            "fork": is_fork,
            "url": f"{self.api_url}/repos/{full_name}",
            # The bare repository: tests and the bot can push to it with plain git.
            "clone_url": self.clone_url,
            "default_branch": upstream.default_branch,
            "visibility": "public",
            "archived": False,
            "has_issues": upstream.has_issues,
            "disabled": False,
            "created_at": timestamp(upstream.created_at),
            "updated_at": timestamp(upstream.created_at),
            "pushed_at": timestamp(upstream.created_at),
            "permissions": {"admin": False, "maintain": False, "push": True, "triage": True, "pull": True},
        }

    def label(self, label: Label) -> dict[str, Any]:
        return {
            "id": label.id,
            "node_id": f"LA_double{label.id}",
            "url": f"{self.repo_api}/labels/{quote(label.name, safe='')}",
            "name": label.name,
            "color": label.color,
            "default": label.default,
            "description": label.description,
        }

    def comment(self, comment: Comment) -> dict[str, Any]:
        return {
            "id": comment.id,
            "node_id": f"IC_double{comment.id}",
            "url": f"{self.repo_api}/issues/comments/{comment.id}",
            "html_url": f"{self.repo_html}/pull/{comment.issue_number}#issuecomment-{comment.id}",
            "issue_url": f"{self.repo_api}/issues/{comment.issue_number}",
            "body": comment.body,
            "user": self.user(comment.author),
            "created_at": timestamp(comment.created_at),
            "updated_at": timestamp(comment.updated_at),
            "author_association": self._association(comment.author),
        }

    def pull_summary(self, pull: PullRequest) -> dict[str, Any]:
        """The shape of an item of `GET /repos/{owner}/{repo}/pulls`."""
        url = f"{self.repo_api}/pulls/{pull.number}"
        issue_url = f"{self.repo_api}/issues/{pull.number}"
        html_url = f"{self.repo_html}/pull/{pull.number}"
        return {
            "url": url,
            "id": pull.id,
            "node_id": f"PR_double{pull.id}",
            "html_url": html_url,
            "diff_url": f"{html_url}.diff",
            "patch_url": f"{html_url}.patch",
            "issue_url": issue_url,
            "commits_url": f"{url}/commits",
            "review_comments_url": f"{url}/comments",
            "review_comment_url": f"{self.repo_api}/pulls/comments{{/number}}",
            "comments_url": f"{issue_url}/comments",
            "statuses_url": f"{self.repo_api}/statuses/{pull.head_sha}",
            "number": pull.number,
            "state": pull.state,
            "locked": False,
            "title": pull.title,
            "user": self.user(pull.author),
            "body": pull.body,
            "labels": [self.label(label) for label in pull.labels],
            "milestone": None,
            "active_lock_reason": None,
            "created_at": timestamp(pull.created_at),
            "updated_at": timestamp(pull.updated_at),
            "closed_at": timestamp(pull.closed_at),
            "merged_at": timestamp(pull.merged_at),
            "merge_commit_sha": pull.merge_commit_sha,
            "assignee": None,
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
            "head": self._part(pull.head_owner, pull.head_ref, pull.head_sha),
            "base": self._part(self.repository.owner, pull.base_ref, pull.base_sha),
            "author_association": self._association(pull.author),
            "auto_merge": None,
            "draft": pull.draft,
        }

    def pull(self, pull: PullRequest) -> dict[str, Any]:
        """The shape of `GET /repos/{owner}/{repo}/pulls/{number}` (and of create and update)."""
        return {
            **self.pull_summary(pull),
            "merged": pull.merged,
            "mergeable": None,  # GitHub computes this in the background; null until it has
            "rebaseable": None,
            "mergeable_state": "unknown",
            "merged_by": self.user(pull.merged_by) if pull.merged_by else None,
            "comments": len(pull.comments),
            "review_comments": 0,
            "maintainer_can_modify": pull.maintainer_can_modify,
        }

    def issue(self, item: PullRequest | Issue) -> dict[str, Any]:
        """`GET .../issues/{number}`, and the items of issue listings and search: an issue, or a pull request
        seen as one (then with a `pull_request` key, which is how clients tell them apart)."""
        is_pull = isinstance(item, PullRequest)
        issue_url = f"{self.repo_api}/issues/{item.number}"
        html_url = f"{self.repo_html}/{'pull' if is_pull else 'issues'}/{item.number}"
        payload = {
            "url": issue_url,
            "repository_url": self.repo_api,
            "labels_url": f"{issue_url}/labels{{/name}}",
            "comments_url": f"{issue_url}/comments",
            "events_url": f"{issue_url}/events",
            "html_url": html_url,
            "id": item.issue_id if is_pull else item.id,
            "node_id": f"PR_double{item.id}" if is_pull else f"I_double{item.id}",
            "number": item.number,
            "title": item.title,
            "user": self.user(item.author),
            "labels": [self.label(label) for label in item.labels],
            "state": item.state,
            "state_reason": None if is_pull else item.state_reason,
            "locked": False,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "comments": len(item.comments),
            "created_at": timestamp(item.created_at),
            "updated_at": timestamp(item.updated_at),
            "closed_at": timestamp(item.closed_at),
            "author_association": self._association(item.author),
            "active_lock_reason": None,
            "body": item.body,
        }
        if is_pull:
            payload["draft"] = item.draft
            payload["pull_request"] = {
                "url": f"{self.repo_api}/pulls/{item.number}",
                "html_url": html_url,
                "diff_url": f"{html_url}.diff",
                "patch_url": f"{html_url}.patch",
                "merged_at": timestamp(item.merged_at),
            }
        else:
            payload["closed_by"] = self.user(item.closed_by) if item.closed_by else None
        return payload

    def _part(self, owner: Account, ref: str, sha: str) -> dict[str, Any]:
        return {
            "label": f"{owner.login}:{ref}",
            "ref": ref,
            "sha": sha,
            "user": self.user(owner),
            "repo": self.repo(owner),
        }

    def _association(self, account: Account) -> str:
        return "OWNER" if account.login == self.repository.owner.login else "NONE"
