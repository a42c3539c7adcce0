"""Reading the 2026-07-28 mirror headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*).

Values that are not plain visible ASCII travel as ``=?base64?<b64 UTF-8>?=``;
the markers are lowercase and exact. A value is decoded before it is compared
with the body, and a value that is neither plain nor a valid encoding is
malformed.
"""

from __future__ import annotations

import base64
import binascii

_SENTINEL_START = "=?base64?"
_SENTINEL_END = "?="


class MalformedHeader(ValueError):
    pass


def decode_header_value(raw: bytes) -> str:
    """The value a client meant, after trimming surrounding whitespace and Base64 decoding."""
    try:
        text = raw.decode("ascii").strip(" \t")
    except UnicodeDecodeError as exc:
        raise MalformedHeader("contains bytes that are not ASCII") from exc
    if any(not (0x20 <= ord(c) <= 0x7E or c == "\t") for c in text):
        raise MalformedHeader("contains control characters")
    if text.startswith(_SENTINEL_START) and text.endswith(_SENTINEL_END) and len(text) >= 11:
        encoded = text[len(_SENTINEL_START) : -len(_SENTINEL_END)]
        try:
            return base64.b64decode(encoded, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise MalformedHeader("is not valid =?base64?...?= encoding") from exc
    return text
