"""The GitHub double's faults, retries, rate limits and authentication, through real PyGithub: the
failures the PR bot's tests inject must look to PyGithub as GitHub's own do."""

from __future__ import annotations

import time

import github
import pytest
import requests
from github_double import Fault, GitHubDouble, github_double_fixture, push_branch  # noqa: F401
from github_double.clients import FAST_RETRY, client, statuses

REPO = "huggingface/diffusers"
PULLS = r"/repos/huggingface/diffusers/pulls"


def test_post_retried_after_a_502_that_created_the_pull_request_meets_already_exists(
    github_double: GitHubDouble,
) -> None:
    push_branch(github_double.bare_repo, "fix", {"a.py": "x = 1\n"})
    repo = client(github_double).get_repo(REPO)
    github_double.inject(Fault.server_error("POST", PULLS, 502, applied=True))

    with pytest.raises(github.GithubException) as raised:
        repo.create_pull(title="Fix", body="", head="fix", base="main")

    assert raised.value.status == 422
    assert "A pull request already exists for huggingface:fix." in str(raised.value.data)
    assert statuses(github_double, "POST", PULLS) == [502, 422]
    assert [pull.number for pull in github_double.pull_requests()] == [1]


def test_post_retried_after_a_502_without_effect_creates_one_pull_request(github_double: GitHubDouble) -> None:
    push_branch(github_double.bare_repo, "fix", {"a.py": "x = 1\n"})
    repo = client(github_double).get_repo(REPO)
    github_double.inject(Fault.server_error("POST", PULLS, 502))

    repo.create_pull(title="Fix", body="", head="fix", base="main")

    assert statuses(github_double, "POST", PULLS) == [502, 201]
    assert len(github_double.pull_requests()) == 1


def test_patch_is_not_retried_on_a_5xx(github_double: GitHubDouble) -> None:
    push_branch(github_double.bare_repo, "fix", {"a.py": "x = 1\n"})
    pull = client(github_double).get_repo(REPO).create_pull(title="Fix", body="", head="fix", base="main")
    github_double.inject(Fault.server_error("PATCH", PULLS + r"/1", 503))

    with pytest.raises(github.GithubException) as raised:
        pull.edit(title="Renamed")

    assert raised.value.status == 503
    assert github_double.pull_request(1).title == "Fix"


def test_exhausted_retries_surface_as_requests_retry_error(github_double: GitHubDouble) -> None:
    github_double.inject(Fault.server_error("GET", r"/repos/huggingface/diffusers", 500, times=10))

    with pytest.raises(requests.exceptions.RetryError):
        client(github_double).get_repo(REPO)

    assert statuses(github_double, "GET", r"/repos/huggingface/diffusers") == [500] * 4  # 1 try + total=3


def test_request_without_a_token_is_rejected_with_401(github_double: GitHubDouble) -> None:
    anonymous = github.Github(base_url=github_double.api_url, retry=FAST_RETRY)

    with pytest.raises(github.GithubException) as raised:
        anonymous.get_repo(REPO)

    assert (raised.value.status, raised.value.data["message"]) == (401, "Requires authentication")


def test_request_with_a_wrong_token_is_bad_credentials(github_double: GitHubDouble) -> None:
    wrong = github.Github(base_url=github_double.api_url, auth=github.Auth.Token("wrong"), retry=FAST_RETRY)

    with pytest.raises(github.BadCredentialsException):
        wrong.get_repo(REPO)


def test_unknown_route_is_githubs_not_found(github_double: GitHubDouble) -> None:
    with pytest.raises(github.UnknownObjectException) as raised:
        client(github_double).get_repo("someone/else")

    assert raised.value.data["message"] == "Not Found"


def test_secondary_rate_limit_waits_for_retry_after_then_succeeds(github_double: GitHubDouble) -> None:
    github_double.inject(Fault.secondary_rate_limit("GET", r"/repos/huggingface/diffusers", retry_after=1))
    started = time.monotonic()

    repo = client(github_double).get_repo(REPO)

    assert repo.full_name == REPO
    assert time.monotonic() - started >= 1
    assert statuses(github_double, "GET", r"/repos/huggingface/diffusers") == [403, 200]


def test_primary_rate_limit_waits_for_the_reset_then_succeeds(github_double: GitHubDouble) -> None:
    github_double.inject(Fault.primary_rate_limit("GET", r"/repos/huggingface/diffusers", reset_in=0))

    assert client(github_double).get_repo(REPO).full_name == REPO
    assert statuses(github_double, "GET", r"/repos/huggingface/diffusers") == [403, 200]


def test_429_with_retry_after_is_retried_then_succeeds(github_double: GitHubDouble) -> None:
    github_double.inject(Fault.too_many_requests("GET", r"/user", retry_after=1))

    assert client(github_double).get_user().login == "codemod-bot"
    assert statuses(github_double, "GET", r"/user") == [429, 200]


def test_every_response_carries_rate_limit_headers(github_double: GitHubDouble) -> None:
    gh = client(github_double)
    gh.get_repo(REPO)

    remaining, limit = gh.rate_limiting

    assert (remaining, limit) == (4999, 5000)
    assert gh.rate_limiting_resettime > time.time()
