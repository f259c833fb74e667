"""The bot's pull requests on GitHub: what exists (open, closed, merged), and the few writes it makes.

GitHub is the only state. The bot's PRs are found three ways, because each can miss some:
the open PRs listing (exact, includes head branches), a search for the fingerprint marker in
bodies by the bot (finds closed and merged ones on any branch, but its index lags), and a
lookup by head branch per group (exact, but only for the branch the group would use).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import github
import requests
from github.Repository import Repository

from bot.github.api import create_once, is_maybe_applied
from bot.github.git import BOT_BRANCH_PREFIX

FINGERPRINT_MARKER = "codemod-fingerprint"
_FINGERPRINT = re.compile(rf"<!--\s*{FINGERPRINT_MARKER}:\s*(\S+)")
# Added to the body of a PR the bot closed as no longer needed: a maintainer's "no" it is not.
AUTOCLOSED_MARKER = "codemod-autoclosed"
_AUTOCLOSED = re.compile(rf"<!--\s*{AUTOCLOSED_MARKER}:")
LABEL_COLOR = "0e8a16"
LABEL_DESCRIPTION = "Makes diffusers faster"


def parse_fingerprint(body: str | None) -> str | None:
    match = _FINGERPRINT.search(body or "")
    return match.group(1) if match else None


def is_autoclosed(body: str | None) -> bool:
    return _AUTOCLOSED.search(body or "") is not None


@dataclass(frozen=True)
class KnownPull:
    number: int
    url: str
    state: str  # "open" or "closed"
    merged: bool
    head_ref: str | None  # None when only seen through search
    author: str
    fingerprint: str | None
    title: str = ""
    handle: Any = field(default=None, compare=False, repr=False)  # the PyGithub object, for writes
    autoclosed: bool = False  # closed by the bot itself, as no longer needed

    @property
    def declined(self) -> bool:
        """Closed without merging by a maintainer: the fix is blocked for good."""
        return self.state == "closed" and not self.merged and not self.autoclosed


class PullRequests:
    """Reads and writes on one repository, as one bot login; in a dry run every write raises."""

    def __init__(self, gh: github.Github, repo: Repository, login: str, dry_run: bool) -> None:
        self.gh = gh
        self.repo = repo
        self.login = login
        self.dry_run = dry_run
        self.head_owner = repo.owner.login  # the bot pushes its branches to the repository itself

    # Reads

    def open_bot_pulls(self) -> list[KnownPull]:
        """Every open PR the bot opened from one of its branches (what the cap counts)."""
        found = []
        for pull in self.repo.get_pulls(state="open"):
            if pull.user.login.lower() == self.login.lower() and pull.head.ref.startswith(BOT_BRANCH_PREFIX):
                found.append(_from_pull(pull))
        return found

    def fingerprinted_pulls(self) -> list[KnownPull]:
        """Every PR (any state) by the bot whose body holds a fingerprint, from the search index."""
        author = f"app/{self.login.removesuffix('[bot]')}" if self.login.endswith("[bot]") else self.login
        query = f'repo:{self.repo.full_name} is:pr author:{author} in:body "{FINGERPRINT_MARKER}"'
        found = []
        for issue in self.gh.search_issues(query):
            merged_at = issue.pull_request.merged_at if issue.pull_request else None
            fingerprint = parse_fingerprint(issue.body)
            if fingerprint:
                found.append(
                    KnownPull(
                        issue.number,
                        issue.html_url,
                        issue.state,
                        merged_at is not None,
                        None,
                        issue.user.login,
                        fingerprint,
                        issue.title,
                        autoclosed=is_autoclosed(issue.body),
                    )
                )
        return found

    def pulls_on_branch(self, branch: str) -> list[KnownPull]:
        """PRs (any state) whose head is the bot's `branch` in this repository."""
        pulls = self.repo.get_pulls(state="all", head=f"{self.head_owner}:{branch}")
        return [_from_pull(pull) for pull in pulls]

    def open_pull_on_branch(self, branch: str, base: str) -> KnownPull | None:
        for pull in self.repo.get_pulls(state="open", head=f"{self.head_owner}:{branch}", base=base):
            return _from_pull(pull)
        return None

    # Writes

    def create(self, title: str, body: str, branch: str, base: str) -> tuple[KnownPull, bool]:
        """Open the PR for `branch`; (pull, reconciled) where reconciled means it was found, not created.

        A create that may have been done (5xx, lost answer) is looked up by head before any second
        attempt; a 422 "already exists" is resolved the same way.
        """
        self._refuse_in_dry_run()

        def send() -> KnownPull:
            return _from_pull(
                self.repo.create_pull(title=title, body=body, head=f"{self.head_owner}:{branch}", base=base)
            )

        def already_exists(error: github.GithubException) -> bool:
            return error.status == 422 and "already exists" in str(error.data)

        return create_once(send, lambda: self.open_pull_on_branch(branch, base), already_exists)

    def update(self, pull: KnownPull, title: str, body: str) -> None:
        self._refuse_in_dry_run()
        pull.handle.edit(title=title, body=body)  # PATCH: idempotent, retried on 5xx by BotRetry

    def comment(self, pull: KnownPull, text: str) -> None:
        """One comment on the PR (a POST: sent once, never retried blindly)."""
        self._refuse_in_dry_run()
        pull.handle.create_issue_comment(text)

    def close_as_not_needed(self, pull: KnownPull, commit: str, comment: str) -> KnownPull:
        """Close the PR, marking its body so later runs know the bot closed it (not a maintainer), then say why."""
        self._refuse_in_dry_run()
        body = (pull.handle.body or "").rstrip("\n") + f"\n\n<!-- {AUTOCLOSED_MARKER}: {commit} -->\n"
        pull.handle.edit(state="closed", body=body)  # PATCH: idempotent, so closed before the comment is posted
        self.comment(pull, comment)
        return replace(pull, state="closed", autoclosed=True)

    def ensure_label(self, pull: KnownPull, name: str) -> None:
        """Add label `name` to the PR, creating it in the repository first if it is missing."""
        self._refuse_in_dry_run()
        ensure_repo_label(self.repo, name)
        if any(label.name.lower() == name.lower() for label in pull.handle.labels):
            return
        for attempt in range(2):
            try:
                pull.handle.add_to_labels(name)  # adding a label twice is harmless, so a lost answer is retried
                return
            except (github.GithubException, requests.RequestException) as error:
                if attempt or not is_maybe_applied(error):
                    raise

    def _refuse_in_dry_run(self) -> None:
        if self.dry_run:
            raise RuntimeError("a GitHub write was attempted in a dry run")


def ensure_repo_label(repo: Repository, name: str) -> None:
    """Create label `name` in the repository unless it exists (the bot's PRs and its dashboard carry it)."""
    try:
        repo.get_label(name)
    except github.UnknownObjectException:
        try:
            repo.create_label(name, LABEL_COLOR, LABEL_DESCRIPTION)
        except github.GithubException as error:
            if error.status != 422:  # 422: someone created it meanwhile
                raise


def _from_pull(pull: Any) -> KnownPull:
    return KnownPull(
        number=pull.number,
        url=pull.html_url,
        state=pull.state,
        merged=pull.merged_at is not None,
        head_ref=pull.head.ref,
        author=pull.user.login,
        fingerprint=parse_fingerprint(pull.body),
        title=pull.title,
        handle=pull,
        autoclosed=is_autoclosed(pull.body),
    )
