"""GitHub's error responses, with the bodies api.github.com really sends.

Clients branch on these bodies (PyGithub picks its exception class from `message`), so the
double must not invent its own wording.
"""

from __future__ import annotations

from typing import Any

DOCS = "https://docs.github.com/rest"


class ApiError(Exception):
    """Raised by the double's state and routes; the server turns it into an HTTP response."""

    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        super().__init__(f"{status}: {body.get('message')}")
        self.status = status
        self.body = body
        self.headers = headers or {}


def error_body(status: int, message: str, documentation_url: str = DOCS) -> dict[str, Any]:
    # GitHub added the stringly-typed "status" field to every error body in 2024.
    return {"message": message, "documentation_url": documentation_url, "status": str(status)}


def not_found() -> ApiError:
    return ApiError(404, error_body(404, "Not Found"))


def validation_failed(documentation_url: str, *errors: dict[str, Any]) -> ApiError:
    body = error_body(422, "Validation Failed", documentation_url)
    body["errors"] = list(errors)
    return ApiError(422, body)


def field_error(resource: str, field: str, code: str) -> dict[str, Any]:
    return {"resource": resource, "field": field, "code": code}


def custom_error(resource: str, message: str) -> dict[str, Any]:
    return {"resource": resource, "code": "custom", "message": message}


def bad_credentials() -> ApiError:
    return ApiError(401, error_body(401, "Bad credentials"))


def requires_authentication() -> ApiError:
    return ApiError(401, error_body(401, "Requires authentication"))


def problems_parsing_json() -> ApiError:
    return ApiError(400, error_body(400, "Problems parsing JSON"))
