"""What the control plane's operations refuse, in terms the API turns into problem details."""

from __future__ import annotations


class DomainError(Exception):
    """A refusal with an HTTP-like status, a title and the field it is about."""

    status = 400
    title = "Invalid request"

    def __init__(self, detail: str, *, field: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field


class NotFound(DomainError):
    status = 404
    title = "Not found"


class Conflict(DomainError):
    status = 409
    title = "Conflict"


class Invalid(DomainError):
    status = 422
    title = "Invalid value"


class Unauthorized(DomainError):
    status = 401
    title = "Unauthorized"


class Forbidden(DomainError):
    status = 403
    title = "Forbidden"
