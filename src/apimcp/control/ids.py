"""Identifiers: short, URL-safe, and sortable by creation time.

13 Crockford base-32 characters: 42 bits of milliseconds since 2024 and 23
random bits. Sorting ids sorts objects by age, which is how "the most recent
exposition of a service" is found without another column.
"""

from __future__ import annotations

import secrets
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_EPOCH_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z


def new_id() -> str:
    value = ((int(time.time() * 1000) - _EPOCH_MS) << 23) | secrets.randbits(23)
    chars = []
    for _ in range(13):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))
