"""Media types as apimcp treats them: JSON, form, multipart, text, or opaque bytes."""

from __future__ import annotations

import re

from apimcp.catalog.model import BodyKind

_TEXT_TYPES = frozenset({"application/xml", "application/yaml", "application/x-yaml", "application/javascript"})


def media_kind(media_type: str) -> BodyKind:
    base = media_type.split(";", 1)[0].strip().lower()
    if base == "application/json" or base.endswith("+json") or base.endswith("/json"):
        return "json"
    if base == "application/x-www-form-urlencoded":
        return "form"
    if base.startswith("multipart/"):
        return "multipart"
    if base.startswith("text/") or base in _TEXT_TYPES or base.endswith("+xml"):
        return "text"
    return "binary"


_CHARSET = re.compile(r';\s*charset\s*=\s*"?([^";\s]+)', re.IGNORECASE)


def media_charset(media_type: str) -> str | None:
    """The `charset` parameter a media type names, in lower case (None: it names none)."""
    found = _CHARSET.search(media_type)
    return found.group(1).lower() if found else None
