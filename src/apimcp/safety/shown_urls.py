"""URLs as records, answers, messages and logs show them: without what may be a secret.

A URL someone gives to import a description or attach an artifact may carry credentials: a user name and
password (`https://user:pass@host/openapi.json`) or a token in its query (`?token=...`, `?access_token=...`).
The fetch needs them; nothing stored, answered or logged does. What stays says where the URL led: its scheme,
host, port and path, and the names of its query's parameters (`?token=***`).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from apimcp.safety.masking import MASK


def shown_url(url: str) -> str:
    """`url` without a user name or password, each query value replaced by `***` and no fragment; a plain path
    (no scheme, no host: a file) is returned as it is. ValueError when `url` cannot be split as a URL."""
    parts = urlsplit(url)
    if not parts.scheme and not parts.netloc:
        return url
    query = "&".join(_masked(pair) for pair in parts.query.split("&") if pair)
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, query, ""))


def shown_location(location: str) -> str:
    """A description's location (a URL or a file path) for a message or a record: `shown_url`; a URL that cannot
    be split (`grpc://[::1`) is cut before its query or fragment, and loses what its authority holds before '@'."""
    try:
        return shown_url(location)
    except ValueError:
        head = re.split(r"[?#]", location, maxsplit=1)[0]
        scheme, separator, rest = head.partition("://")
        if not separator:
            return head
        authority, slash, path = rest.partition("/")
        return f"{scheme}://{authority.rpartition('@')[2]}{slash}{path}"


def _masked(pair: str) -> str:
    name, equals, _ = pair.partition("=")
    return f"{name}={MASK}" if equals else MASK
