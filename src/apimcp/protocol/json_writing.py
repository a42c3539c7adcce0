"""Why a value cannot be written as JSON, said plainly.

JSON that parses may still not be writable: orjson reads 1,024 levels of nesting but writes 254, and a value built
elsewhere may hold an integer beyond 64 bits or a string with a lone surrogate. Whoever meets such a value tells
its reader why in these words, not orjson's.
"""

from __future__ import annotations


def unwritable_reason(exc: Exception) -> str:
    """Why orjson refused to write a value (`exc`, its `JSONEncodeError`)."""
    said = str(exc)
    if "Recursion limit" in said:
        return "it is nested more than 254 levels deep"
    if "64-bit" in said:
        return "it holds an integer beyond 64 bits"
    if "UTF-8" in said:
        return "it holds text that is not valid Unicode"
    return "it holds a value JSON cannot represent"
