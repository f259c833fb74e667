"""The GitHub double's issues, specified through real PyGithub: what the dashboard's tests rely on."""

from __future__ import annotations

import github
import pytest
from github_double import GitHubDouble, github_double_fixture, push_branch  # noqa: F401
from test_github_double import REPO, client, statuses

ISSUES = r"/repos/huggingface/diffusers/issues"


def test_created_issue_is_listed_by_its_creator_with_its_labels(github_double: GitHubDouble) -> None:
    repo = client(github_double).get_repo(REPO)

    created = repo.create_issue(title="Board", body="Hello", labels=["performance"])
    listed = list(repo.get_issues(state="all", creator="codemod-bot"))

    assert statuses(github_double, "POST", ISSUES) == [201]
    assert [(i.number, i.title, i.body, i.pull_request) for i in listed] == [(created.number, "Board", "Hello", None)]
    assert [label.name for label in listed[0].labels] == ["performance"]
    assert repo.get_label("performance").color == "ededed"  # created implicitly, as GitHub does


def test_issue_listing_includes_pull_requests_and_filters_by_creator(github_double: GitHubDouble) -> None:
    push_branch(github_double.bare_repo, "fix", {"a.py": "x = 1\n"})
    repo = client(github_double).get_repo(REPO)
    pull = repo.create_pull(title="Fix", body="", head="fix", base="main")
    issue = repo.create_issue(title="Board")
    github_double.add_human_pull_request("someone", "theirs", "Theirs")

    mine = list(repo.get_issues(state="all", creator="codemod-bot"))

    assert [(i.number, i.pull_request is not None) for i in mine] == [(issue.number, False), (pull.number, True)]
    assert issue.number == pull.number + 1  # one number sequence for both


def test_edit_changes_the_body_and_closing_records_who_and_why(github_double: GitHubDouble) -> None:
    repo = client(github_double).get_repo(REPO)
    issue = repo.create_issue(title="Board", body="old")

    issue.edit(body="new")
    github_double.close_issue(issue.number, reason="not_planned")
    fetched = repo.get_issue(issue.number)

    assert statuses(github_double, "PATCH", rf"{ISSUES}/{issue.number}") == [200]
    assert (fetched.body, fetched.state, fetched.state_reason) == ("new", "closed", "not_planned")
    assert fetched.closed_by.login == "huggingface"


def test_closed_issues_are_listed_only_with_state_closed_or_all(github_double: GitHubDouble) -> None:
    repo = client(github_double).get_repo(REPO)
    issue = repo.create_issue(title="Board")
    github_double.close_issue(issue.number)

    assert list(repo.get_issues(state="open")) == []
    assert [i.number for i in repo.get_issues(state="closed")] == [issue.number]


def test_a_maintainers_edit_reaches_the_next_read(github_double: GitHubDouble) -> None:
    repo = client(github_double).get_repo(REPO)
    issue = repo.create_issue(title="Board", body="- [ ] ignore")

    github_double.edit_issue_body(issue.number, lambda body: body.replace("[ ]", "[x]"))

    assert repo.get_issue(issue.number).body == "- [x] ignore"


def test_issue_without_a_title_is_422(github_double: GitHubDouble) -> None:
    repo = client(github_double).get_repo(REPO)

    with pytest.raises(github.GithubException) as raised:
        repo.create_issue(title="")

    assert raised.value.status == 422
    assert raised.value.data["errors"] == [{"resource": "Issue", "field": "title", "code": "missing_field"}]


def test_search_tells_issues_from_pull_requests(github_double: GitHubDouble) -> None:
    push_branch(github_double.bare_repo, "fix", {"a.py": "x = 1\n"})
    repo = client(github_double).get_repo(REPO)
    repo.create_pull(title="Fix", body="marker", head="fix", base="main")
    issue = repo.create_issue(title="Board", body="marker")
    gh = client(github_double)

    found = gh.search_issues(f"repo:{REPO} is:issue marker")

    assert [i.number for i in found] == [issue.number]
