"""The GitHub double, specified through real PyGithub: what the PR bot's tests can rely on."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor

import github
import pytest
from github.Repository import Repository
from github_double import Fault, GitHubDouble, github_double_fixture, push_branch, push_branches  # noqa: F401
from github_double.clients import client, statuses

REPO = "huggingface/diffusers"
PULLS = r"/repos/huggingface/diffusers/pulls"
def test_created_pull_request_is_listed_by_owner_and_branch(github_double: GitHubDouble) -> None:
    sha = push_branch(github_double.bare_repo, "codemod/fix-1", {"a.py": "x = 1\n"})
    repo = client(github_double).get_repo(REPO)

    created = repo.create_pull(title="Fix", body="Body", head="codemod/fix-1", base="main")
    listed = repo.get_pulls(state="open", head="huggingface:codemod/fix-1", base="main")

    assert statuses(github_double, "POST", PULLS) == [201]
    assert [pull.number for pull in listed] == [created.number] == [1]
    assert (created.head.sha, created.head.label, created.state, created.merged) == (
        sha,
        "huggingface:codemod/fix-1",
        "open",
        False,
    )


def test_head_filter_without_owner_is_ignored_like_on_github(github_double: GitHubDouble) -> None:
    push_branches(github_double.bare_repo, ["one", "two"], {"a.py": "x = 1\n"})
    repo = client(github_double).get_repo(REPO)
    repo.create_pull(title="One", body="", head="one", base="main")
    repo.create_pull(title="Two", body="", head="two", base="main")

    assert [pull.title for pull in repo.get_pulls(head="one")] == ["Two", "One"]


def test_pull_request_from_a_branch_missing_on_the_remote_is_rejected(github_double: GitHubDouble) -> None:
    repo = client(github_double).get_repo(REPO)

    with pytest.raises(github.GithubException) as raised:
        repo.create_pull(title="Fix", body="", head="never-pushed", base="main")

    assert raised.value.status == 422
    assert raised.value.data["errors"] == [{"resource": "PullRequest", "field": "head", "code": "invalid"}]


def test_second_pull_request_for_an_open_head_is_rejected_with_githubs_message(
    github_double: GitHubDouble,
) -> None:
    push_branch(github_double.bare_repo, "fix", {"a.py": "x = 1\n"})
    repo = client(github_double).get_repo(REPO)
    repo.create_pull(title="Fix", body="", head="fix", base="main")

    with pytest.raises(github.GithubException) as raised:
        repo.create_pull(title="Fix again", body="", head="huggingface:fix", base="main")

    assert raised.value.status == 422
    assert raised.value.data["message"] == "Validation Failed"
    assert raised.value.data["errors"] == [
        {"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for huggingface:fix."}
    ]


def test_pagination_follows_link_headers_to_all_35_pull_requests(github_double: GitHubDouble) -> None:
    branches = [f"fix-{i}" for i in range(35)]
    push_branches(github_double.bare_repo, branches, {"a.py": "x = 1\n"})
    repo = client(github_double, per_page=10).get_repo(REPO)
    for branch in branches:
        repo.create_pull(title=branch, body="", head=branch, base="main")

    numbers = [pull.number for pull in repo.get_pulls(state="open")]

    assert numbers == list(range(35, 0, -1))  # newest first, GitHub's default for sort=created
    assert [entry.query["page"] for entry in github_double.requests("GET", PULLS)[1:]] == [["2"], ["3"], ["4"]]
    assert repo.get_pulls(state="open").totalCount == 35  # read from rel="last" of a per_page=1 request


def test_head_sha_follows_pushes_to_the_branch(github_double: GitHubDouble) -> None:
    push_branch(github_double.bare_repo, "fix", {"a.py": "x = 1\n"})
    repo = client(github_double).get_repo(REPO)
    number = repo.create_pull(title="Fix", body="", head="fix", base="main").number

    pushed = push_branch(github_double.bare_repo, "fix", {"a.py": "x = 2\n"})

    assert repo.get_pull(number).head.sha == pushed


def test_head_sha_is_read_from_packed_refs_and_a_deleted_branch_is_gone(github_double: GitHubDouble) -> None:
    bare_repo = github_double.bare_repo
    push_branches(bare_repo, ["packed", "deleted"], {"a.py": "x = 1\n"})
    # As `git gc` leaves a remote: every ref packed (`main` included); the next push writes a loose ref over one.
    subprocess.run(["git", "--git-dir", str(bare_repo), "pack-refs", "--all"], check=True)
    pushed = push_branch(bare_repo, "packed", {"a.py": "x = 2\n"})
    subprocess.run(["git", "--git-dir", str(bare_repo), "branch", "--quiet", "-D", "deleted"], check=True)
    repo = client(github_double).get_repo(REPO)

    assert repo.create_pull(title="Fix", body="", head="packed", base="main").head.sha == pushed
    with pytest.raises(github.GithubException) as raised:
        repo.create_pull(title="Gone", body="", head="deleted", base="main")
    assert raised.value.data["errors"] == [{"resource": "PullRequest", "field": "head", "code": "invalid"}]


def test_labels_are_created_fetched_and_added_to_a_pull_request(github_double: GitHubDouble) -> None:
    push_branch(github_double.bare_repo, "fix", {"a.py": "x = 1\n"})
    repo = client(github_double).get_repo(REPO)
    pull = repo.create_pull(title="Fix", body="", head="fix", base="main")

    repo.create_label("performance", "0e8a16", "Makes things faster")
    fetched = repo.get_label("performance")
    pull.add_to_labels(fetched, "codemod")  # an unknown name is created on the fly, as GitHub does

    assert (fetched.name, fetched.color, fetched.description) == ("performance", "0e8a16", "Makes things faster")
    assert [label.name for label in repo.get_pull(pull.number).labels] == ["performance", "codemod"]
    assert [label.name for label in repo.get_labels()] == ["codemod", "performance"]


def test_missing_label_is_404_and_duplicate_label_is_422(github_double: GitHubDouble) -> None:
    repo = client(github_double).get_repo(REPO)
    repo.create_label("codemod", "ededed")

    with pytest.raises(github.UnknownObjectException):
        repo.get_label("absent")
    with pytest.raises(github.GithubException) as raised:
        repo.create_label("Codemod", "ededed")

    assert raised.value.data["errors"] == [{"resource": "Label", "field": "name", "code": "already_exists"}]


def test_comments_are_posted_and_listed_on_a_pull_request(github_double: GitHubDouble) -> None:
    push_branch(github_double.bare_repo, "fix", {"a.py": "x = 1\n"})
    pull = client(github_double).get_repo(REPO).create_pull(title="Fix", body="", head="fix", base="main")

    pull.create_issue_comment("Benchmark: 1.4x faster")

    assert [(c.user.login, c.body) for c in pull.get_issue_comments()] == [("codemod-bot", "Benchmark: 1.4x faster")]


def test_search_finds_the_pull_request_whose_body_holds_a_fingerprint(github_double: GitHubDouble) -> None:
    push_branches(github_double.bare_repo, ["a", "b"], {"a.py": "x = 1\n"})
    gh = client(github_double)
    repo = gh.get_repo(REPO)
    repo.create_pull(title="A", body="Unrelated change", head="a", base="main")
    wanted = repo.create_pull(title="B", body="...\n<!-- codemod-fingerprint: 9f3c2e -->", head="b", base="main")

    found = gh.search_issues(f'repo:{REPO} is:pr in:body "codemod-fingerprint: 9f3c2e" author:codemod-bot')

    assert [issue.number for issue in found] == [wanted.number]
    assert found.totalCount == 1


def test_search_matches_whole_words_not_substrings(github_double: GitHubDouble) -> None:
    push_branch(github_double.bare_repo, "a", {"a.py": "x = 1\n"})
    gh = client(github_double)
    gh.get_repo(REPO).create_pull(title="A", body="fingerprint 9f3c2e", head="a", base="main")

    assert gh.search_issues(f"repo:{REPO} is:pr 9f3c").totalCount == 0


def test_pull_request_closed_by_a_maintainer_is_listed_as_closed_and_unmerged(github_double: GitHubDouble) -> None:
    push_branch(github_double.bare_repo, "fix", {"a.py": "x = 1\n"})
    repo = client(github_double).get_repo(REPO)
    number = repo.create_pull(title="Fix", body="", head="fix", base="main").number

    github_double.close_pull_request(number)

    closed = list(repo.get_pulls(state="closed"))
    assert [(pull.number, pull.state, pull.merged) for pull in closed] == [(number, "closed", False)]
    assert list(repo.get_pulls(state="open")) == []


def test_human_pull_request_is_listed_with_its_author(github_double: GitHubDouble) -> None:
    number = github_double.add_human_pull_request("alice", "patch-1", "Speed up attention")

    pulls = list(client(github_double).get_repo(REPO).get_pulls())

    assert [(p.number, p.user.login, p.head.label) for p in pulls] == [(number, "alice", "alice:patch-1")]


def test_reset_forgets_pull_requests_faults_and_the_log(github_double: GitHubDouble) -> None:
    github_double.add_human_pull_request("alice", "patch-1", "Speed up attention")
    github_double.inject(Fault.server_error("GET", r"/user"))

    github_double.reset()

    assert (github_double.pull_requests(), github_double.pending_faults(), github_double.requests()) == ([], [], [])


def test_pull_request_without_new_commits_is_rejected(github_double: GitHubDouble) -> None:
    push_branches(github_double.bare_repo, ["main", "unchanged"], {"a.py": "x = 1\n"})
    repo = client(github_double).get_repo(REPO)

    with pytest.raises(github.GithubException) as raised:
        repo.create_pull(title="Nothing", body="", head="unchanged", base="main")

    assert raised.value.data["errors"] == [
        {"resource": "PullRequest", "code": "custom", "message": "No commits between main and unchanged"}
    ]


def test_search_is_closed_finds_only_closed_pull_requests(github_double: GitHubDouble) -> None:
    push_branches(github_double.bare_repo, ["a", "b"], {"a.py": "x = 1\n"})
    gh = client(github_double)
    repo = gh.get_repo(REPO)
    repo.create_pull(title="A", body="fingerprint 9f3c2e", head="a", base="main")
    closed = repo.create_pull(title="B", body="fingerprint 9f3c2e", head="b", base="main")
    github_double.close_pull_request(closed.number)

    found = gh.search_issues(f"repo:{REPO} is:pr is:closed 9f3c2e")

    assert [issue.number for issue in found] == [closed.number]


def test_racing_creates_for_one_head_give_one_201_and_one_422(github_double: GitHubDouble) -> None:
    push_branch(github_double.bare_repo, "fix", {"a.py": "x = 1\n"})
    repos = [client(github_double).get_repo(REPO) for _ in range(2)]

    def create(repo: Repository) -> int:
        try:
            return repo.create_pull(title="Fix", body="", head="fix", base="main").number
        except github.GithubException as error:
            return error.status

    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = sorted(pool.map(create, repos))

    assert outcomes == [1, 422]
