"""`SecretMask`: credential values a backend echoes, replaced before anyone sees them.

A backend that echoes its request (a debugging endpoint, an error page quoting
the headers, a token-introspection answer) would hand the gateway's credentials
to the MCP client. A mask knows each credential value in the forms an answer may
carry it: as is, JSON-escaped (with and without `\\/` for `/`, with and without
non-ASCII escaped) and percent-encoded (upper- and lower-case hex, `+` or `%20`
for spaces). Each form found is replaced by `***`.

Values shorter than `MIN_MASKED_CHARS` are not searched: a one-letter password
would otherwise mangle every answer. The mask is applied once, to the answer's
bytes, so text, structured content and error excerpts all come from masked
bytes. When nothing matches it costs one bytes `in` test per form.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

MIN_MASKED_CHARS = 6
"""Values shorter than this are not searched (a Basic header's base64 is always long enough)."""

MASK = "***"
_MASK_BYTES = MASK.encode()
_PERCENT = re.compile(r"%[0-9A-F]{2}")
_UNICODE_ESCAPE = re.compile(r"\\u[0-9a-f]{4}")


_HTML_SAFE = str.maketrans({"&": "\\u0026", "<": "\\u003c", ">": "\\u003e"})


def forms(value: str) -> set[str]:
    """The spellings of `value` an answer may hold."""
    found = {value}
    escaped = json.dumps(value, ensure_ascii=False)[1:-1]
    ascii_escaped = json.dumps(value)[1:-1]
    upper_hex = _UNICODE_ESCAPE.sub(lambda m: "\\u" + m.group()[2:].upper(), ascii_escaped)
    found |= {escaped, ascii_escaped, upper_hex}
    if any(mark in value for mark in "&<>"):  # Go's encoding/json and Rails write them \u0026, \u003c, \u003e
        for form in (escaped, ascii_escaped):
            safe = form.translate(_HTML_SAFE)
            found |= {safe, _UNICODE_ESCAPE.sub(lambda m: "\\u" + m.group()[2:].upper(), safe)}
    found |= {form.replace("/", "\\/") for form in list(found)}
    for encoded in (quote(value, safe=""), quote_plus(value, safe="")):
        found |= {encoded, _PERCENT.sub(lambda m: m.group().lower(), encoded)}
    return found


_LEAD_CHARS = (0, 2, 3)
"""Base64 characters that depend on the bytes before a value that starts 0, 1 or 2 bytes into a 3-byte group."""


def base64_forms(value: str) -> set[str]:
    """The spellings of `value` inside base64 text (the JSON of protobuf `bytes`), standard and URL-safe: at each of
    the three places it may start in a 3-byte group, the characters that depend on its bytes alone."""
    data = value.encode()
    found: set[str] = set()
    for lead in range(3):
        encoded = base64.b64encode(b"\0" * lead + data).decode().rstrip("=")
        end = len(encoded) - (1 if (lead + len(data)) % 3 else 0)  # the last character may hold the next bytes' bits
        core = encoded[_LEAD_CHARS[lead] : end]
        if len(core) >= MIN_MASKED_CHARS:
            found |= {core, core.replace("+", "-").replace("/", "_")}
    return found


class SecretMask:
    """Replaces the known spellings of some secret values; immutable, cheap to apply when nothing matches.
    `in_base64`: their base64 spellings too (an answer whose bytes are written as base64, as gRPC's are)."""

    __slots__ = ("_base64", "_forms", "_in_base64", "_texts", "_values")

    def __init__(
        self, values: Iterable[str] = (), *, min_chars: int = MIN_MASKED_CHARS, in_base64: bool = False
    ) -> None:
        self._values = tuple(dict.fromkeys(v for v in values if len(v) >= min_chars))
        self._in_base64 = in_base64
        self._base64: SecretMask | None = self if in_base64 else None
        spellings = {form for value in self._values for form in forms(value)}
        if in_base64:
            spellings |= {form for value in self._values for form in base64_forms(value)}
        # Longest first: a value inside a longer one (or a form inside another) must not leave a tail behind.
        self._texts = tuple(sorted(spellings, key=lambda form: (-len(form), form)))
        self._forms = tuple(form.encode() for form in self._texts)

    def __bool__(self) -> bool:
        return bool(self._forms)

    def __len__(self) -> int:
        """How many values are searched."""
        return len(self._values)

    def __repr__(self) -> str:
        return f"SecretMask({len(self._values)} values)"  # never the values

    def __add__(self, other: SecretMask) -> SecretMask:
        if not other:
            return self
        if not self:
            return other
        return SecretMask((*self._values, *other._values), in_base64=self._in_base64 or other._in_base64)

    def in_base64(self) -> SecretMask:
        """This mask, searching the values' base64 spellings too (made once)."""
        if self._base64 is None:
            self._base64 = SecretMask(self._values, in_base64=True) if self else self
        return self._base64

    def mask_bytes(self, data: bytes) -> bytes:
        for form in self._forms:
            if form in data:
                data = data.replace(form, _MASK_BYTES)
        return data

    def mask_text(self, text: str) -> str:
        for form in self._texts:
            if form in text:
                text = text.replace(form, MASK)
        return text


NO_MASK = SecretMask()
"""The mask of a backend without credentials: masks nothing, costs nothing."""
