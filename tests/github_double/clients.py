"""PyGithub pointed at the double: the client the double's own tests use, and what the double logged."""

from __future__ import annotations

import github
from github.GithubRetry import GithubRetry

from github_double.double import GitHubDouble

# Fast but otherwise PyGithub's default policy: same statuses and methods, fewer and shorter waits.
FAST_RETRY = GithubRetry(total=3, backoff_factor=0.01, secondary_rate_wait=0.1)


def client(double: GitHubDouble, per_page: int = 30) -> github.Github:
    # No request spacing: PyGithub's defaults (0.25 s, 1 s per write) only slow tests down.
    return github.Github(
        base_url=double.api_url,
        auth=github.Auth.Token(double.token),
        retry=FAST_RETRY,
        per_page=per_page,
        seconds_between_requests=None,
        seconds_between_writes=None,
    )


def statuses(double: GitHubDouble, method: str, path: str) -> list[int]:
    return [entry.status for entry in double.requests(method, path)]
