"""Media types as apimcp treats them: JSON, form, multipart, text, or opaque bytes."""

from __future__ import annotations

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
