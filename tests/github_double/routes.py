"""The REST endpoints the double serves, as a table of (method, path pattern, handler)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlencode

from .errors import not_found, problems_parsing_json
from .issues import HostedIssues
from .model import Account
from .payloads import Renderer
from .rate_limits import RateLimits
from .repository import HostedRepository
from .search import search_issues

DEFAULT_PER_PAGE, MAX_PER_PAGE = 30, 100


@dataclass
class ApiRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    user: Account

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None

    def json_object(self) -> dict[str, Any]:
        if self.body is None:
            return {}
        if not isinstance(self.body, dict):
            raise problems_parsing_json()
        return self.body


@dataclass
class ApiResponse:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[ApiRequest, dict[str, str]], ApiResponse]
_REPO = r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"
_ISSUE = _REPO + r"/issues/(?P<number>\d+)"


class Routes:
    def __init__(
        self,
        repository: HostedRepository,
        issues: HostedIssues,
        renderer: Renderer,
        rate_limits: RateLimits,
        api_url: str,
    ) -> None:
        self.repository = repository
        self.issues = issues
        self.render = renderer
        self.rate_limits = rate_limits
        self.api_url = api_url
        table: list[tuple[str, str, Handler]] = [
            ("GET", r"/user", self.get_authenticated_user),
            ("GET", r"/users/(?P<login>[^/]+)", self.get_user),
            ("GET", r"/rate_limit", self.get_rate_limit),
            ("GET", _REPO, self.get_repo),
            ("GET", _REPO + r"/pulls", self.list_pulls),
            ("POST", _REPO + r"/pulls", self.create_pull),
            ("GET", _REPO + r"/pulls/(?P<number>\d+)", self.get_pull),
            ("PATCH", _REPO + r"/pulls/(?P<number>\d+)", self.update_pull),
            ("GET", _REPO + r"/issues", self.list_issues),
            ("POST", _REPO + r"/issues", self.create_issue),
            ("GET", _ISSUE, self.get_issue),
            ("PATCH", _ISSUE, self.update_issue),
            ("GET", _ISSUE + r"/labels", self.list_issue_labels),
            ("POST", _ISSUE + r"/labels", self.add_issue_labels),
            ("PUT", _ISSUE + r"/labels", self.set_issue_labels),
            ("DELETE", _ISSUE + r"/labels/(?P<name>[^/]+)", self.remove_issue_label),
            ("GET", _ISSUE + r"/comments", self.list_comments),
            ("POST", _ISSUE + r"/comments", self.create_comment),
            ("GET", _REPO + r"/labels", self.list_labels),
            ("POST", _REPO + r"/labels", self.create_label),
            ("GET", _REPO + r"/labels/(?P<name>[^/]+)", self.get_label),
            ("GET", r"/search/issues", self.search_issues),
        ]
        self._table = [(method, re.compile(pattern), handler) for method, pattern, handler in table]

    def dispatch(self, request: ApiRequest) -> ApiResponse:
        for method, pattern, handler in self._table:
            match = pattern.fullmatch(request.path)
            if match and method == request.method:
                params = {key: unquote(value) for key, value in match.groupdict().items()}
                if "owner" in params and not self._is_hosted(params, allow_fork=handler == self.get_repo):
                    raise not_found()
                # One request at a time, as seen by the state: two racing creates for one head
                # end as on GitHub, one 201 and one 422, and responses never show half an update.
                with self.repository.lock:
                    return handler(request, params)
        raise not_found()

    # Users and meta

    def get_authenticated_user(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        return ApiResponse(200, self.render.user(request.user))

    def get_user(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        account = self.repository.known_account(params["login"])
        if account is None:
            raise not_found()
        return ApiResponse(200, self.render.user(account))

    def get_rate_limit(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        return ApiResponse(200, self.rate_limits.snapshot())

    def get_repo(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        return ApiResponse(200, self.render.repo(self.repository.known_account(params["owner"])))

    # Pull requests

    def list_pulls(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        pulls = self.repository.list_pulls(
            state=request.param("state") or "open",
            head=request.param("head"),
            base=request.param("base"),
            sort=request.param("sort") or "created",
            direction=request.param("direction"),
        )
        return self._page(request, [self.render.pull_summary(p) for p in pulls])

    def create_pull(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        body = request.json_object()
        pull = self.repository.create_pull(
            request.user,
            body.get("title"),
            body.get("body"),
            body.get("head"),
            body.get("base"),
            draft=bool(body.get("draft", False)),
            maintainer_can_modify=bool(body.get("maintainer_can_modify", False)),
        )
        payload = self.render.pull(pull)
        return ApiResponse(201, payload, {"Location": payload["url"]})

    def get_pull(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        return ApiResponse(200, self.render.pull(self.repository.pull(int(params["number"]))))

    def update_pull(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        body = request.json_object()
        pull = self.repository.edit_pull(
            int(params["number"]),
            title=body.get("title"),
            body=body.get("body"),
            state=body.get("state"),
            base=body.get("base"),
        )
        return ApiResponse(200, self.render.pull(pull))

    # Issues (pull requests are issues too)

    def list_issues(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        items = self.issues.listing(
            state=request.param("state") or "open",
            creator=request.param("creator"),
            labels=request.param("labels"),
            sort=request.param("sort") or "created",
            direction=request.param("direction") or "desc",
        )
        return self._page(request, [self.render.issue(item) for item in items])

    def create_issue(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        body = request.json_object()
        issue = self.issues.create(request.user, body.get("title"), body.get("body"), self._label_names(body))
        payload = self.render.issue(issue)
        return ApiResponse(201, payload, {"Location": payload["url"]})

    def get_issue(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        return ApiResponse(200, self.render.issue(self.repository.item(int(params["number"]))))

    def update_issue(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        body = request.json_object()
        item = self.issues.edit(
            int(params["number"]),
            request.user,
            title=body.get("title"),
            body=body.get("body"),
            state=body.get("state"),
            state_reason=body.get("state_reason"),
            labels=self._label_names(body) if "labels" in body else None,
        )
        return ApiResponse(200, self.render.issue(item))

    # Labels

    def list_labels(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        return self._page(request, [self.render.label(label) for label in self.repository.labels()])

    def get_label(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        return ApiResponse(200, self.render.label(self.repository.label(params["name"])))

    def create_label(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        body = request.json_object()
        label = self.repository.create_label(body.get("name"), body.get("color"), body.get("description"))
        payload = self.render.label(label)
        return ApiResponse(201, payload, {"Location": payload["url"]})

    def list_issue_labels(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        labels = self.repository.item(int(params["number"])).labels
        return self._page(request, [self.render.label(label) for label in labels])

    def add_issue_labels(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        labels = self.repository.add_labels(int(params["number"]), self._label_names(request.body))
        return ApiResponse(200, [self.render.label(label) for label in labels])

    def set_issue_labels(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        labels = self.repository.set_labels(int(params["number"]), self._label_names(request.body))
        return ApiResponse(200, [self.render.label(label) for label in labels])

    def remove_issue_label(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        labels = self.repository.remove_label(int(params["number"]), params["name"])
        return ApiResponse(200, [self.render.label(label) for label in labels])

    # Comments

    def list_comments(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        comments = self.repository.item(int(params["number"])).comments
        return self._page(request, [self.render.comment(comment) for comment in comments])

    def create_comment(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        comment = self.repository.add_comment(int(params["number"]), request.user, request.json_object().get("body"))
        payload = self.render.comment(comment)
        return ApiResponse(201, payload, {"Location": payload["url"]})

    # Search

    def search_issues(self, request: ApiRequest, params: dict[str, str]) -> ApiResponse:
        state = self.repository.state
        found = search_issues(
            [*state.pulls.values(), *state.issues.values()],
            state.full_name,
            request.param("q"),
            request.param("sort"),
            request.param("order"),
        )
        items = [{**self.render.issue(item), "score": 1.0} for item in found]
        page = self._page(request, items)
        page.body = {"total_count": len(items), "incomplete_results": False, "items": page.body}
        return page

    # Helpers

    def _is_hosted(self, params: dict[str, str], allow_fork: bool) -> bool:
        owners = {self.repository.state.owner.login.lower()}
        if allow_fork:
            owners.add(self.repository.bot.login.lower())
        return params["owner"].lower() in owners and params["repo"].lower() == self.repository.state.name.lower()

    @staticmethod
    def _label_names(body: Any) -> list[str]:
        # GitHub takes ["a", "b"], {"labels": ["a"]} or {"labels": [{"name": "a"}]}.
        entries = body.get("labels", []) if isinstance(body, dict) else body
        if not isinstance(entries, list):
            raise problems_parsing_json()
        return [entry["name"] if isinstance(entry, dict) else str(entry) for entry in entries]

    def _page(self, request: ApiRequest, items: list[Any]) -> ApiResponse:
        """One page of `items` and GitHub's Link header (prev/next/last/first) for the others."""
        per_page = min(max(_int(request.param("per_page"), DEFAULT_PER_PAGE), 1), MAX_PER_PAGE)
        page = max(_int(request.param("page"), 1), 1)
        last = max(math.ceil(len(items) / per_page), 1)

        def page_url(number: int) -> str:
            query = {key: values for key, values in request.query.items() if key != "page"}
            query["page"] = [str(number)]
            return f"{self.api_url}{request.path}?{urlencode(query, doseq=True)}"

        rels: list[tuple[str, int]] = []
        if page > 1:
            rels.append(("prev", min(page - 1, last)))
        if page < last:
            rels += [("next", page + 1), ("last", last)]
        if page > 1:
            rels.append(("first", 1))
        headers = {"Link": ", ".join(f'<{page_url(n)}>; rel="{rel}"' for rel, n in rels)} if rels else {}
        return ApiResponse(200, items[(page - 1) * per_page : page * per_page], headers)


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default
