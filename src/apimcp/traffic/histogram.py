"""Latency histograms with fixed bounds: small (a list of counts), added up by anyone, read as quantiles.

Every gateway and the control plane share the bounds, so counts from any number of gateways and minutes merge by
adding lists; a quantile read from them is exact to its bucket and interpolated inside it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

BOUNDS_MS: tuple[float, ...] = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000)
"""The upper bound of each bucket but the last, which holds everything slower."""
SIZE = len(BOUNDS_MS) + 1


def empty() -> list[int]:
    return [0] * SIZE


def bucket_of(milliseconds: float) -> int:
    return bisect_left(BOUNDS_MS, milliseconds)


def add_into(total: list[int], counts: Sequence[int]) -> None:
    for position, count in enumerate(counts):
        total[position] += count


def quantile(counts: Sequence[int], fraction: float) -> float | None:
    """The latency under which `fraction` of the counted requests fell (None when none was counted); past the
    last bound, the last bound (the histogram knows no more)."""
    total = sum(counts)
    if total == 0:
        return None
    wanted = fraction * total
    seen = 0
    for position, count in enumerate(counts):
        if count and seen + count >= wanted:
            if position == len(BOUNDS_MS):
                return BOUNDS_MS[-1]
            lower = BOUNDS_MS[position - 1] if position else 0.0
            upper = BOUNDS_MS[position]
            return round(lower + (upper - lower) * (wanted - seen) / count, 3)
        seen += count
    return BOUNDS_MS[-1]
