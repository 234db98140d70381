"""Errors: every failed call raises an `APIError` carrying the RFC 9457 problem the API
answered (`type`, `title`, `status`, `detail`, `field` and any extension members), or an
`APIConnectionError` when no answer came back after the retries."""

from __future__ import annotations

from typing import Any

import httpx


class AgentrlError(Exception):
    """Base of the SDK's errors."""


class APIConnectionError(AgentrlError):
    """No answer: the connection failed or timed out on every attempt."""


class APIError(AgentrlError):
    """The API answered with an error status."""

    status: int
    type: str
    title: str
    detail: str
    field: str | None
    extensions: dict[str, Any]
    response: httpx.Response

    def __init__(self, response: httpx.Response, problem: dict[str, Any]) -> None:
        self.response = response
        self.status = response.status_code
        self.type = str(problem.get("type", "about:blank"))
        self.title = str(problem.get("title", response.reason_phrase))
        self.detail = str(problem.get("detail", response.text[:500]))
        self.field = problem.get("field")
        known = {"type", "title", "status", "detail", "field"}
        self.extensions = {k: v for k, v in problem.items() if k not in known}
        where = f" (field {self.field})" if self.field else ""
        super().__init__(f"{self.status} {self.title}: {self.detail}{where}")


class BadRequestError(APIError):
    """400: the request does not parse or a field is invalid (`field` names it)."""


class AuthenticationError(APIError):
    """401: the API key (or token) is missing or not accepted."""


class PermissionDeniedError(APIError):
    """403."""


class NotFoundError(APIError):
    """404: no such resource for this tenant (another tenant's resources are 404 too)."""


class ConflictError(APIError):
    """409: the state changed (e.g. an Idempotency-Key reused with another body)."""


class PayloadTooLargeError(APIError):
    """413."""


class UnprocessableEntityError(APIError):
    """422: the request is well formed but refused (e.g. a gate's reasons in `extensions`)."""


class RateLimitError(APIError):
    """429: retried with back-off first; raised when the retries ran out."""


class InternalServerError(APIError):
    """5xx: retried first; raised when the retries ran out."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError,
    404: NotFoundError, 409: ConflictError, 413: PayloadTooLargeError,
    422: UnprocessableEntityError, 429: RateLimitError,
}


def error_for(response: httpx.Response) -> APIError:
    """The exception for an error answer, built from its problem+json body when it has one."""
    try:
        body = response.json()
    except ValueError:
        body = None
    problem = body if isinstance(body, dict) else {}
    cls = _BY_STATUS.get(response.status_code)
    if cls is None:
        cls = InternalServerError if response.status_code >= 500 else APIError
    return cls(response, problem)
