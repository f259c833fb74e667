"""`GitHubDouble`: the test-facing object, and the `github_double` pytest fixture."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

import pytest

from .faults import Fault, FaultPlan
from .git_remote import GitRemote, create_bare_remote
from .issues import HostedIssues
from .model import Account, IdSource, Issue, PullRequest, RepositoryState
from .payloads import Renderer
from .rate_limits import RateLimits
from .repository import HostedRepository
from .routes import Routes
from .server import ApiServer, HttpThread, RecordedRequest


class GitHubDouble:
    """A GitHub REST API on 127.0.0.1 hosting one repository (pull requests, issues, labels, comments)
    whose git remote is `bare_repo`.

    Point PyGithub at it with `Github(base_url=double.api_url, auth=Auth.Token(double.token))`.
    The authenticated user is `login`; branches it pushes to `bare_repo` can be used as PR heads
    either bare (`"branch"`) or as its fork (`f"{login}:branch"`).
    """

    def __init__(
        self,
        bare_repo: Path,
        *,
        repository: str = "huggingface/diffusers",
        login: str = "codemod-bot",
        token: str = "ghs_double_token",
        default_branch: str = "main",
        host: str = "127.0.0.1",
    ) -> None:
        owner_login, name = repository.split("/")
        ids = IdSource()
        self.bare_repo = bare_repo
        self.token = token
        self.login = login
        self.repository = repository
        self._http = HttpThread(host)
        self.api_url = f"http://{host}:{self._http.port}"
        state = RepositoryState(Account(owner_login, ids.next(), "Organization"), name, default_branch, ids.next())
        self.bot = Account(login, ids.next())
        self._repo = HostedRepository(state, GitRemote(bare_repo), self.bot, ids)
        self._issues = HostedIssues(self._repo)
        self._faults = FaultPlan()
        self._rate_limits = RateLimits()
        renderer = Renderer(self.api_url, state, str(bare_repo))
        routes = Routes(self._repo, self._issues, renderer, self._rate_limits, self.api_url)
        self._api = ApiServer(routes, self._faults, self._rate_limits, token, self.bot)

    # Lifecycle

    def start(self) -> GitHubDouble:
        self._http.start(self._api)
        return self

    def stop(self) -> None:
        self._http.stop()

    def __enter__(self) -> GitHubDouble:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        if exc_type is None and self._api.internal_errors:
            raise AssertionError("The GitHub double crashed while serving:\n" + "\n".join(self._api.internal_errors))

    # State, as a maintainer or another contributor would change it

    def pull_requests(self, state: str = "all") -> list[PullRequest]:
        """Copies, oldest first, so tests can inspect them while the server keeps running."""
        pulls = self._repo.list_pulls(state=state, sort="created", direction="asc")
        with self._repo.lock:
            return copy.deepcopy(pulls)

    def pull_request(self, number: int) -> PullRequest:
        with self._repo.lock:
            return copy.deepcopy(self._repo.pull(number))

    def close_pull_request(self, number: int) -> None:
        """A maintainer closes it without merging."""
        self._repo.edit_pull(number, state="closed")

    def merge_pull_request(self, number: int) -> None:
        """A maintainer merges it (the double marks it merged; the remote's base branch is left alone)."""
        self._repo.merge_pull(number, by=self._repo.state.owner)

    def add_human_pull_request(
        self, author: str, head_ref: str, title: str, body: str = "", base: str | None = None
    ) -> int:
        """A contributor's PR from their own fork (not on the remote), e.g. one touching the same code."""
        base = base or self._repo.state.default_branch
        return self._repo.add_fork_pull(self._repo.account(author), title, body, head_ref, base).number

    def issues(self, state: str = "all") -> list[Issue]:
        """Issues proper (no pull requests), as copies, oldest first."""
        with self._repo.lock:
            found = [i for i in self._issues.listing(state=state, direction="asc") if isinstance(i, Issue)]
            return copy.deepcopy(found)

    def issue(self, number: int) -> Issue:
        with self._repo.lock:
            return copy.deepcopy(self._issues.issue(number))

    def close_issue(self, number: int, reason: str = "completed") -> None:
        """A maintainer closes it."""
        self._issues.edit(number, self._repo.state.owner, state="closed", state_reason=reason)

    def turn_off_issues(self) -> None:
        """Settings -> Features -> Issues unticked, as on a fresh fork."""
        with self._repo.lock:
            self._repo.state.has_issues = False

    def edit_issue_body(self, number: int, edit: Callable[[str], str]) -> None:
        """A maintainer edits the body in the web editor (e.g. ticks a checkbox): `edit` maps old text to new."""
        with self._repo.lock:
            body = self._issues.issue(number).body or ""
            self._issues.edit(number, self._repo.state.owner, body=edit(body))

    def reset(self) -> None:
        """Forget pull requests, issues, labels, faults, the request log and rate-limit counts."""
        with self._repo.lock:
            self._repo.state.pulls.clear()
            self._repo.state.issues.clear()
            self._repo.state.labels.clear()
        self._faults.clear()
        self._rate_limits.reset()
        with self._api.log_lock:
            self._api.log.clear()

    # Faults and the request log

    def inject(self, fault: Fault) -> Fault:
        self._faults.add(fault)
        return fault

    def pending_faults(self) -> list[Fault]:
        return self._faults.pending()

    def requests(self, method: str | None = None, path: str | None = None) -> list[RecordedRequest]:
        """The log, optionally only one method and paths fully matching the regular expression `path`."""
        with self._api.log_lock:
            log = list(self._api.log)
        return [
            entry
            for entry in log
            if (method is None or entry.method == method.upper()) and (path is None or re.fullmatch(path, entry.path))
        ]


# Named apart from its function so test modules can import it without shadowing warnings (F811).
@pytest.fixture(name="github_double")
def github_double_fixture(tmp_path: Path) -> Iterator[GitHubDouble]:
    """A running double whose remote is a fresh bare repository with one commit on `main`."""
    bare_repo = tmp_path / "remote.git"
    create_bare_remote(bare_repo)
    with GitHubDouble(bare_repo) as double:
        yield double
