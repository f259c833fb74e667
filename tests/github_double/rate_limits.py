"""The primary rate limit bookkeeping GitHub reports in `X-RateLimit-*` headers on every response."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

# GitHub's quotas for a token: 5000 core requests and 30 searches, per hour and per minute.
QUOTAS = {"core": (5000, 3600), "search": (30, 60)}


@dataclass
class _Window:
    limit: int
    length_s: int
    used: int = 0
    reset: int = 0


class RateLimits:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._windows = {name: _Window(limit, length) for name, (limit, length) in QUOTAS.items()}

    @staticmethod
    def resource_for(path: str) -> str:
        return "search" if path.startswith("/search/") else "core"

    def spend(self, resource: str) -> dict[str, str]:
        """Count one request and return the headers GitHub would send with its response."""
        with self._lock:
            window = self._current(resource)
            window.used += 1
            return {
                "X-RateLimit-Limit": str(window.limit),
                "X-RateLimit-Remaining": str(max(window.limit - window.used, 0)),
                "X-RateLimit-Reset": str(window.reset),
                "X-RateLimit-Used": str(window.used),
                "X-RateLimit-Resource": resource,
            }

    def snapshot(self) -> dict[str, Any]:
        """The body of `GET /rate_limit`."""
        with self._lock:
            resources = {}
            for name in self._windows:
                window = self._current(name)
                resources[name] = {
                    "limit": window.limit,
                    "used": window.used,
                    "remaining": window.limit - window.used,
                    "reset": window.reset,
                }
            return {"resources": resources, "rate": resources["core"]}

    def reset(self) -> None:
        with self._lock:
            for window in self._windows.values():
                window.used, window.reset = 0, 0

    def _current(self, resource: str) -> _Window:
        window = self._windows[resource]
        now = int(time.time())
        if now >= window.reset:
            window.used, window.reset = 0, now + window.length_s
        return window
