"""The rules GitHub enforces on pull requests and comments, over a `RepositoryState`.

Issues proper are in `issues.py`, labels in `labels.py`; labels and comments serve both.

Every public method takes the lock: the HTTP server is threaded and tests call the state
helpers from their own thread while PyGithub is talking to the server.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from .errors import ApiError, custom_error, field_error, not_found, validation_failed
from .git_remote import GitRemote
from .labels import LabelRules
from .model import Account, Comment, IdSource, Issue, PullRequest, RepositoryState, now

CREATE_PULL_DOCS = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"
UPDATE_PULL_DOCS = "https://docs.github.com/rest/pulls/pulls#update-a-pull-request"
LIST_PULLS_DOCS = "https://docs.github.com/rest/pulls/pulls#list-pull-requests"


class HostedRepository(LabelRules):
    def __init__(self, state: RepositoryState, remote: GitRemote, bot: Account, ids: IdSource) -> None:
        self.state = state
        self.remote = remote
        self.bot = bot
        self.ids = ids
        self.lock = threading.RLock()
        # Keyed by lower-cased login: GitHub logins are case-insensitive.
        self._accounts: dict[str, Account] = {state.owner.login.lower(): state.owner, bot.login.lower(): bot}

    def account(self, login: str) -> Account:
        with self.lock:
            if login.lower() not in self._accounts:
                self._accounts[login.lower()] = Account(login, self.ids.next())
            return self._accounts[login.lower()]

    def known_account(self, login: str) -> Account | None:
        with self.lock:
            return self._accounts.get(login.lower())

    # Pull requests

    def create_pull(
        self,
        author: Account,
        title: str | None,
        body: str | None,
        head: str | None,
        base: str | None,
        draft: bool = False,
        maintainer_can_modify: bool = False,
    ) -> PullRequest:
        with self.lock:
            if not title:
                raise _missing_field("title")
            if not head:
                raise _missing_field("head")
            if not base:
                raise _missing_field("base")
            head_owner, head_ref = self._parse_head(head)
            head_sha = self.remote.head_sha(head_ref) if head_owner.login in self._remote_owners() else None
            if head_sha is None:
                raise validation_failed(CREATE_PULL_DOCS, field_error("PullRequest", "head", "invalid"))
            base_sha = self.remote.head_sha(base)
            if base_sha is None:
                raise validation_failed(CREATE_PULL_DOCS, field_error("PullRequest", "base", "invalid"))
            self._refuse_duplicate(f"{head_owner.login}:{head_ref}", base, CREATE_PULL_DOCS)
            if self.remote.is_ancestor(head_sha, base_sha):
                raise validation_failed(
                    CREATE_PULL_DOCS, custom_error("PullRequest", f"No commits between {base} and {head_ref}")
                )
            return self._add_pull(
                author,
                title,
                body,
                head_owner,
                head_ref,
                head_sha,
                base,
                base_sha,
                draft=draft,
                maintainer_can_modify=maintainer_can_modify,
            )

    def add_fork_pull(self, author: Account, title: str, body: str, head_ref: str, base: str) -> PullRequest:
        """A contributor's pull request from their own fork, whose commits the remote does not hold;
        the base tip stands in for its head commit."""
        with self.lock:
            base_sha = self.remote.head_sha(base)
            if base_sha is None:
                raise ValueError(f"base branch {base!r} is not on the remote {self.remote.bare_repo}; push it first")
            return self._add_pull(author, title, body, author, head_ref, base_sha, base, base_sha)

    def pull(self, number: int) -> PullRequest:
        with self.lock:
            if number not in self.state.pulls:
                raise not_found()
            pull = self.state.pulls[number]
            self.refresh_head_shas([pull])
            return pull

    def list_pulls(
        self,
        state: str = "open",
        head: str | None = None,
        base: str | None = None,
        sort: str = "created",
        direction: str | None = None,
    ) -> list[PullRequest]:
        with self.lock:
            if state not in ("open", "closed", "all"):
                raise validation_failed(LIST_PULLS_DOCS, field_error("PullRequest", "state", "invalid"))
            pulls = [p for p in self.state.pulls.values() if state == "all" or p.state == state]
            # GitHub silently ignores a head filter without "owner:", returning every pull request.
            if head and ":" in head:
                pulls = [p for p in pulls if p.head_label.lower() == head.lower()]
            if base:
                pulls = [p for p in pulls if p.base_ref == base]
            descending = (direction or ("desc" if sort == "created" else "asc")) == "desc"
            sort_keys = {
                "created": lambda p: (p.created_at, p.number),
                "updated": lambda p: (p.updated_at, p.number),
                "popularity": lambda p: (len(p.comments), p.number),
                "long-running": lambda p: (p.created_at, p.number),
            }
            if sort not in sort_keys:
                raise validation_failed(LIST_PULLS_DOCS, field_error("PullRequest", "sort", "invalid"))
            pulls.sort(key=sort_keys[sort], reverse=descending)
            self.refresh_head_shas(pulls)
            return pulls

    def edit_pull(
        self,
        number: int,
        title: str | None = None,
        body: str | None = None,
        state: str | None = None,
        base: str | None = None,
    ) -> PullRequest:
        with self.lock:
            pull = self.pull(number)
            if state is not None and state not in ("open", "closed"):
                raise validation_failed(UPDATE_PULL_DOCS, field_error("PullRequest", "state", "invalid"))
            if base is not None and self.remote.head_sha(base) is None:
                raise validation_failed(UPDATE_PULL_DOCS, field_error("PullRequest", "base", "invalid"))
            if state == "open" and pull.state == "closed":
                if pull.merged:
                    raise validation_failed(
                        UPDATE_PULL_DOCS, custom_error("PullRequest", "Cannot reopen a merged pull request")
                    )
                self._refuse_duplicate(pull.head_label, base or pull.base_ref, UPDATE_PULL_DOCS)
                pull.state, pull.closed_at = "open", None
            elif state == "closed" and pull.state == "open":
                pull.close()
            if title is not None:
                pull.title = title
            if body is not None:
                pull.body = body
            if base is not None:
                pull.base_ref = base
            pull.touch()
            return pull

    def merge_pull(self, number: int, by: Account) -> PullRequest:
        with self.lock:
            pull = self.pull(number)
            pull.merge(by)
            return pull

    def refresh_head_shas(self, pulls: Iterable[PullRequest]) -> None:
        """Open pull requests follow their branch, as on GitHub; closed ones keep their last commit."""
        with self.lock:
            open_hosted = [p for p in pulls if p.state == "open" and p.head_owner.login in self._remote_owners()]
            if not open_hosted:
                return
            heads = self.remote.branch_heads()
            for pull in open_hosted:
                pull.head_sha = heads.get(pull.head_ref, pull.head_sha)

    def item(self, number: int) -> PullRequest | Issue:
        """A pull request or an issue: labels and comments work on both, as on GitHub."""
        with self.lock:
            if number in self.state.issues:
                return self.state.issues[number]
            return self.pull(number)

    # Comments

    def add_comment(self, number: int, author: Account, body: str | None) -> Comment:
        with self.lock:
            item = self.item(number)
            if not body:
                raise validation_failed(
                    "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
                    field_error("IssueComment", "body", "missing_field"),
                )
            comment = Comment(self.ids.next(), number, author, body)
            item.comments.append(comment)
            item.touch()
            return comment

    # Internals

    def _remote_owners(self) -> set[str]:
        # The bare repository stands for both the upstream repository and the bot's fork of it.
        return {self.state.owner.login, self.bot.login}

    def _parse_head(self, head: str) -> tuple[Account, str]:
        owner_login, _, ref = head.rpartition(":")
        owner = self.known_account(owner_login) if owner_login else self.state.owner
        if owner is None or not ref:
            raise validation_failed(CREATE_PULL_DOCS, field_error("PullRequest", "head", "invalid"))
        return owner, ref

    def _refuse_duplicate(self, head_label: str, base: str, docs: str) -> None:
        for other in self.state.pulls.values():
            if other.state == "open" and other.head_label.lower() == head_label.lower() and other.base_ref == base:
                raise validation_failed(
                    docs, custom_error("PullRequest", f"A pull request already exists for {other.head_label}.")
                )

    def _add_pull(
        self,
        author: Account,
        title: str,
        body: str | None,
        head_owner: Account,
        head_ref: str,
        head_sha: str,
        base: str,
        base_sha: str,
        draft: bool = False,
        maintainer_can_modify: bool = False,
    ) -> PullRequest:
        created = now()
        pull = PullRequest(
            number=self.state.next_number(),
            id=self.ids.next(),
            issue_id=self.ids.next(),
            title=title,
            body=body,
            author=author,
            head_owner=head_owner,
            head_ref=head_ref,
            head_sha=head_sha,
            base_ref=base,
            base_sha=base_sha,
            draft=draft,
            maintainer_can_modify=maintainer_can_modify,
            created_at=created,
            updated_at=created,
        )
        self.state.pulls[pull.number] = pull
        return pull


def _missing_field(name: str) -> ApiError:
    return validation_failed(CREATE_PULL_DOCS, field_error("PullRequest", name, "missing_field"))
