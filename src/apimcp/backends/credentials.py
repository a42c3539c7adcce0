"""Static backend credentials: what the gateway adds to every call of a service.

Values never appear in logs, errors or reprs; `secret_values` names what an
answer must not show (see `apimcp.safety.masking`).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
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
    return place_all(() if credentials is None else (credentials,))


def place_all(credentials: Iterable[Credentials]) -> Placement:
    """Where several credentials go in one request (they never share a name: plans and configurations refuse
    two credentials for the same header, query parameter or cookie)."""
    placement = Placement()
    for item in credentials:
        _place(item, placement)
    return placement


def merged(first: Placement, second: Placement) -> Placement:
    """Both placements in one: `second` wins on a shared name, header names compared without case (a user's
    `authorization` replaces the service's `Authorization`: sent both, a backend reading the first took every user
    for the service account)."""
    if not first.headers and not first.query and not first.cookies:
        return second
    taken = {name.lower() for name in second.headers}
    named = {name for name, _ in second.query}
    return Placement(
        headers={**{k: v for k, v in first.headers.items() if k.lower() not in taken}, **second.headers},
        query=[*((k, v) for k, v in first.query if k not in named), *second.query],
        cookies={**first.cookies, **second.cookies},
    )


def _place(credentials: Credentials, placement: Placement) -> None:
    if isinstance(credentials, Bearer):
        placement.headers["Authorization"] = f"Bearer {credentials.token}"
    elif isinstance(credentials, Basic):
        placement.headers["Authorization"] = basic_header(credentials.username, credentials.password)
    elif isinstance(credentials, ApiKey):
        if credentials.location == "header":
            placement.headers[credentials.name] = credentials.value
        elif credentials.location == "query":
            placement.query.append((credentials.name, credentials.value))
        else:
            placement.cookies[credentials.name] = credentials.value


def basic_header(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode("ascii")


def secret_values(credentials: Credentials) -> tuple[str, ...]:
    """What a backend's answer must not show: the values, and the Basic header's base64 form."""
    if isinstance(credentials, Bearer):
        return (credentials.token,)
    if isinstance(credentials, Basic):
        return (credentials.password, basic_header(credentials.username, credentials.password).removeprefix("Basic "))
    return (credentials.value,)


def placed_values(placement: Placement) -> tuple[str, ...]:
    """The values a placement sends; of a `Scheme credentials` header value, the credentials."""
    headers = [value.split(" ", 1)[1] if " " in value else value for value in placement.headers.values()]
    return (*headers, *(value for _, value in placement.query), *placement.cookies.values())


def header_problem(value: str) -> str | None:
    """Why `value` cannot be an HTTP field value (RFC 9110: no control characters but tab), or None."""
    if value.isprintable():  # no control character at all (the common case): no pattern to run on every header
        return None
    found = _CONTROL.search(value)
    if found is None:
        return None
    return f"it holds the control character {_named(found.group())}, which an HTTP header cannot carry"


_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""What a header or cookie name is made of (RFC 9110 token)."""


def name_problem(name: str, location: str) -> str | None:
    """Why `name` cannot name an API key in `location` (header, cookie or query), or None."""
    if location in ("header", "cookie") and not _TOKEN.fullmatch(name):
        return f"{name!r} cannot be a {location} name: letters, digits and !#$%&'*+.^_`|~- only"
    problem = header_problem(name)  # a query parameter's name is encoded, but a control character is a mistake
    return None if problem is None else f"the name {problem.removeprefix('it ')}"


def _named(char: str) -> str:
    return {"\r": "CR", "\n": "LF", "\x00": "NUL", "\x7f": "DEL"}.get(char, f"U+{ord(char):04X}")
