"""Fault injection: answer chosen requests with an error instead of (or after) serving them.

`applied=True` is the dangerous real-world case: GitHub did the work (created the pull
request) but the client saw a 502, so its retry meets the result of the first attempt.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from .errors import error_body

RATE_LIMIT_DOCS = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
SECONDARY_RATE_LIMIT_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID 0000:DOUBLE."
)


@dataclass
class Fault:
    method: str  # "GET", "POST", ...
    path: str  # regular expression matched against the whole path, e.g. r"/repos/[^/]+/[^/]+/pulls"
    status: int
    body: dict[str, Any] | None = None  # None: GitHub's body for `status`
    headers: dict[str, str] = field(default_factory=dict)  # override the double's usual headers
    times: int = 1  # how many matching requests get this fault
    applied: bool = False  # serve the request (changing state) before answering with the fault
    _pattern: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.method = self.method.upper()
        self._pattern = re.compile(self.path)
        if self.body is None:
            self.body = error_body(self.status, HTTPStatus(self.status).phrase)

    def matches(self, method: str, path: str) -> bool:
        return method == self.method and self._pattern.fullmatch(path) is not None

    @classmethod
    def server_error(cls, method: str, path: str, status: int = 502, *, applied: bool = False, times: int = 1) -> Fault:
        """A 5xx, by default with no effect; `applied=True` for "it worked, but the answer got lost"."""
        return cls(method, path, status, times=times, applied=applied)

    @classmethod
    def secondary_rate_limit(cls, method: str, path: str, retry_after: int = 1, *, times: int = 1) -> Fault:
        """GitHub's abuse limit: 403 with Retry-After and the message PyGithub recognises."""
        return cls(
            method,
            path,
            403,
            error_body(403, SECONDARY_RATE_LIMIT_MESSAGE, RATE_LIMIT_DOCS),
            {"Retry-After": str(retry_after)},
            times=times,
        )

    @classmethod
    def primary_rate_limit(cls, method: str, path: str, reset_in: int = 0, *, times: int = 1) -> Fault:
        """The hourly quota is spent: 403, remaining 0, and the epoch second it resets at."""
        reset = str(int(time.time()) + reset_in)
        message = (
            "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please "
            "include the request ID 0000:DOUBLE."
        )
        return cls(
            method,
            path,
            403,
            error_body(403, message, RATE_LIMIT_DOCS),
            {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset},
            times=times,
        )

    @classmethod
    def too_many_requests(cls, method: str, path: str, retry_after: int = 1, *, times: int = 1) -> Fault:
        return cls(
            method,
            path,
            429,
            error_body(429, SECONDARY_RATE_LIMIT_MESSAGE, RATE_LIMIT_DOCS),
            {"Retry-After": str(retry_after)},
            times=times,
        )


class FaultPlan:
    """Faults in the order they were injected; the first that matches a request takes it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(self, fault: Fault) -> None:
        with self._lock:
            self._faults.append(fault)

    def take(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path):
                    fault.times -= 1
                    if fault.times <= 0:
                        self._faults.remove(fault)
                    return fault
            return None

    def pending(self) -> list[Fault]:
        with self._lock:
            return list(self._faults)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()
