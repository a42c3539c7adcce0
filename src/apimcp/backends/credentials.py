"""Static backend credentials: what the gateway adds to every call of a service.

Values never appear in logs, errors or reprs.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import quote


@dataclass(frozen=True, slots=True)
class Bearer:
    token: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class Basic:
    username: str
    password: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class ApiKey:
    name: str
    value: str = field(repr=False)
    location: Literal["header", "query", "cookie"] = "header"


Credentials = Bearer | Basic | ApiKey


@dataclass(slots=True)
class Placement:
    """Where credentials go in one request."""

    headers: dict[str, str] = field(default_factory=dict)
    query: list[tuple[str, str]] = field(default_factory=list)
    cookies: dict[str, str] = field(default_factory=dict)

    def headers_with_cookies(self) -> dict[str, str]:
        """The headers, with the cookies folded into one `Cookie` header (values percent-encoded)."""
        if not self.cookies:
            return dict(self.headers)
        cookie = "; ".join(f"{name}={quote(value, safe='')}" for name, value in self.cookies.items())
        return {**self.headers, "Cookie": cookie}


def place(credentials: Credentials | None) -> Placement:
    placement = Placement()
    if isinstance(credentials, Bearer):
        placement.headers["Authorization"] = f"Bearer {credentials.token}"
    elif isinstance(credentials, Basic):
        pair = f"{credentials.username}:{credentials.password}".encode()
        placement.headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
    elif isinstance(credentials, ApiKey):
        if credentials.location == "header":
            placement.headers[credentials.name] = credentials.value
        elif credentials.location == "query":
            placement.query.append((credentials.name, credentials.value))
        else:
            placement.cookies[credentials.name] = credentials.value
    return placement
