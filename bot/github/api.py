"""PyGithub, configured for a bot that must never do a write twice.

PyGithub's `GithubRetry` retries 5xx for every method, POST included: a create that GitHub
performed but answered with a 502 would be sent again blindly. `BotRetry` keeps its handling of
rate limits (403/429 mean "not done", so any method may retry) and of 5xx on reads and
idempotent writes (GET, PUT, DELETE, PATCH), but hands a POST's 5xx or lost answer back to the
caller, which looks up what happened before any second attempt (`create_once`).

Every retry is announced (what failed, which retry of how many, how long until it), so a run that
waits on GitHub says so. A connection that is never accepted (no network, a wrong `--api-url`)
gets only `connect_retries` tries: waiting minutes on a host that refuses rarely helps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import github
import requests
from github.GithubRetry import GithubRetry
from urllib3.util.retry import Retry

_RATE_LIMIT_WORDS = ("rate limit", "abuse")
Created = TypeVar("Created")


@dataclass(frozen=True)
class ClientSettings:
    """How hard to retry and how politely to space requests (PyGithub's own defaults for spacing)."""

    retries: int = 8
    connect_retries: int = 2  # of the `retries`, those for a connection never accepted
    backoff_factor: float = 2.0  # seconds; doubled each retry
    secondary_rate_wait: float = 60.0  # GitHub asks for at least a minute after a secondary limit
    max_rate_limit_wait: float = 900.0  # wait at most this long for a primary limit to reset, else stop
    seconds_between_requests: float | None = 0.25
    seconds_between_writes: float | None = 1.0
    timeout: float = 30.0
    per_page: int = 100


class BotRetry(GithubRetry):
    """GithubRetry, except that a POST is never re-sent after a 5xx or a lost response; each retry is announced."""

    def __init__(self, announce: Callable[[str], None] | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("allowed_methods", Retry.DEFAULT_ALLOWED_METHODS | {"GET", "POST", "PATCH"})
        self.announce = announce
        super().__init__(**kwargs)

    def new(self, **kw: Any) -> BotRetry:
        return super().new(announce=self.announce, **kw)

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        if method == "POST" and status_code >= 500:
            return False
        return super().is_retry(method, status_code, has_retry_after)

    def increment(self, method: str | None = None, url: str | None = None, *args: Any, **kwargs: Any) -> Retry:
        error = kwargs.get("error", args[1] if len(args) > 1 else None)
        if method == "POST" and error is not None and self._is_read_error(error):
            raise error  # the request may have been served: the caller reconciles
        retry = super().increment(method, url, *args, **kwargs)
        if self.announce is not None:
            response = kwargs.get("response", args[0] if args else None)
            self.announce(self._retry_line(retry, f"{method} {url}", error, response))
        return retry

    def _retry_line(self, retry: Retry, request: str, error: BaseException | None, response: Any) -> str:
        """`GET /repos/x/y: cannot connect ([Errno 111] Connection refused); retry 1 of 2 in 0 s`."""
        if error is not None and retry.connect != self.connect:  # urllib3 counted it as a connection error
            cause, left = f"cannot connect ({_last_clause(error)})", (retry.total, retry.connect)
        elif error is not None:
            cause, left = f"{type(error).__name__} ({_short(error, 120)})", (retry.total,)
        else:
            cause, left = f"answered {getattr(response, 'status', '?')}", (retry.total,)
        done = len(retry.history)
        limit = done + min(n for n in left if isinstance(n, int))
        return f"GitHub: {request}: {cause}; retry {done} of {limit} in {retry.get_backoff_time():.0f} s"


def connect(
    api_url: str, token: str | None, settings: ClientSettings, announce: Callable[[str], None] | None = None
) -> github.Github:
    retry = BotRetry(
        announce=announce,
        total=settings.retries,
        connect=settings.connect_retries,
        backoff_factor=settings.backoff_factor,
        secondary_rate_wait=settings.secondary_rate_wait,
        max_rate_limit_wait=settings.max_rate_limit_wait,
    )
    return github.Github(
        base_url=api_url,
        auth=github.Auth.Token(token) if token else None,
        retry=retry,
        timeout=int(settings.timeout),
        per_page=settings.per_page,
        seconds_between_requests=settings.seconds_between_requests,
        seconds_between_writes=settings.seconds_between_writes,
    )


class GitHubUnavailable(Exception):
    """GitHub kept failing (5xx, rate limits, network) after the retries: the run stops where it is."""


def unavailable_reason(error: BaseException) -> str | None:
    """Why `error` means "stop talking to GitHub for now", or None if it is about one request only."""
    if isinstance(error, requests.exceptions.RetryError):
        return f"GitHub kept failing after retries ({_short(error)})"
    if isinstance(error, requests.exceptions.ConnectionError) and error.request is not None:
        host = urlsplit(error.request.url).netloc
        return f"cannot reach GitHub at {host} ({_last_clause(error)}): check the network and --api-url"
    if isinstance(error, requests.exceptions.RequestException):
        return f"cannot reach GitHub ({type(error).__name__}: {_short(error)})"
    if isinstance(error, github.RateLimitExceededException):
        return f"GitHub rate limit exceeded ({_message(error)})"
    if isinstance(error, github.BadCredentialsException):
        return "GitHub rejected the token (401 Bad credentials): check the GITHUB_TOKEN secret"
    if isinstance(error, github.GithubException):
        if error.status >= 500 or error.status == 429:
            return f"GitHub answered {error.status} ({_message(error)})"
        if error.status == 403 and any(word in _message(error).lower() for word in _RATE_LIMIT_WORDS):
            return f"GitHub rate limit exceeded ({_message(error)})"
    return None


def is_maybe_applied(error: BaseException) -> bool:
    """A write that failed this way may still have been done by GitHub."""
    if isinstance(error, requests.exceptions.RetryError):
        return True
    if isinstance(error, (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError)):
        return True
    return isinstance(error, github.GithubException) and error.status >= 500


def create_once(
    send: Callable[[], Created],
    find: Callable[[], Created | None],
    conflict: Callable[[github.GithubException], bool] = lambda error: False,
) -> tuple[Created, bool]:
    """POST something GitHub must hold once (a PR, the dashboard issue); (it, reconciled) where reconciled
    means it was found, not created.

    A POST that may have been done (5xx, lost answer) is looked up with `find` before any second
    attempt; an error `conflict` recognises ("already exists") is resolved by `find` alone.
    """
    last: BaseException | None = None
    for _ in range(2):
        try:
            return send(), False
        except github.GithubException as error:
            if conflict(error):
                existing = find()
                if existing is not None:
                    return existing, True
                raise
            if not is_maybe_applied(error):
                raise
            last = error
        except requests.RequestException as error:  # the answer was lost, maybe after the work was done
            if not is_maybe_applied(error):
                raise
            last = error
        existing = find()
        if existing is not None:
            return existing, True
    assert last is not None
    raise GitHubUnavailable(unavailable_reason(last) or error_message(last))


def error_message(error: BaseException) -> str:
    if isinstance(error, github.GithubException):
        return f"GitHub answered {error.status}: {_message(error)}"
    return f"{type(error).__name__}: {_short(error)}"


def _message(error: github.GithubException) -> str:
    data = error.data if isinstance(error.data, dict) else {}
    details = [
        e.get("message") or f"{e.get('field')} {e.get('code')}" for e in data.get("errors", []) if isinstance(e, dict)
    ]
    return "; ".join([str(data.get("message") or error.status), *details])


def _last_clause(error: BaseException) -> str:
    """What requests' and urllib3's nested connection errors come down to: `[Errno 111] Connection refused`."""
    while True:
        inner = getattr(error, "reason", None) or next((a for a in error.args if isinstance(a, BaseException)), None)
        if not isinstance(inner, BaseException):
            return str(error).rsplit(": ", 1)[-1]
        error = inner


def _short(error: BaseException, limit: int = 300) -> str:
    text = str(error)
    return text if len(text) <= limit else text[: limit - 1] + "…"
