"""Reading the 2026-07-28 mirror headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*).

Values that are not plain visible ASCII travel as ``=?base64?<b64 UTF-8>?=``;
the markers are lowercase and exact. A value is decoded before it is compared
with the body, and a value that is neither plain nor a valid encoding is
malformed.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re

_SENTINEL_START = b"=?base64?"
_SENTINEL_END = b"?="
_FORBIDDEN = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f-\xff]")


class MalformedHeader(ValueError):
    pass


_CACHED_UP_TO = 128
"""Values this short are decoded once and remembered (they repeat: versions, methods, tool names)."""


def decode_header_value(raw: bytes) -> str:
    """The value a client meant, after trimming surrounding whitespace and Base64 decoding."""
    if len(raw) <= _CACHED_UP_TO:
        return _decode_cached(raw)
    return _decode(raw)


@functools.lru_cache(maxsize=1024)  # at most 1024 values of 128 bytes: a client cannot grow it
def _decode_cached(raw: bytes) -> str:
    return _decode(raw)


def _decode(raw: bytes) -> str:
    value = raw.strip(b" \t")
    if _FORBIDDEN.search(value) is not None:
        raise MalformedHeader("contains control characters or bytes that are not ASCII")
    if value.startswith(_SENTINEL_START) and value.endswith(_SENTINEL_END) and len(value) >= 11:
        encoded = value[len(_SENTINEL_START) : -len(_SENTINEL_END)]
        try:
            return base64.b64decode(encoded, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise MalformedHeader("is not valid =?base64?...?= encoding") from exc
    return value.decode("ascii")
