"""Where output filters run: on the event loop for small results, in worker threads for large ones (that they
do run there: tests/gateway/test_composition.py)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from apimcp.artifacts.filter_runner import FilterLimits, FilterRunner
from apimcp.protocol.models import CallToolResult, TextContent

LIMITS = FilterLimits(max_added_bytes=4096, thread_above_bytes=1000, workers=1)


def structured(value: Any) -> CallToolResult:
    return CallToolResult(content=(TextContent(text=orjson.dumps(value).decode()),), structured_content=value)


SMALL = structured({"rows": [1, 2, 3]})
LARGE = structured({"rows": list(range(500))})


def test_small_results_stay_on_the_loop_and_large_ones_do_not() -> None:
    runner = FilterRunner(LIMITS)
    retain = runner.compile({"jsonRetain": ["/rows"]}, "t")
    assert runner.on_the_loop(retain, SMALL) and not runner.on_the_loop(retain, LARGE)
    # structured content without text: its size is not known, so it is taken as large
    assert not runner.on_the_loop(retain, CallToolResult(structured_content={"rows": []}))


def test_what_patches_may_add_counts_with_the_result() -> None:
    runner = FilterRunner(LIMITS)
    small_add = runner.compile({"jsonPatches": [{"op": "add", "path": "/n", "value": "x"}]}, "t")
    big_add = runner.compile({"jsonPatches": [{"op": "add", "path": "/n", "value": "x" * 1000}]}, "t")
    copying = runner.compile({"jsonPatches": [{"op": "copy", "from": "/rows", "path": "/again"}]}, "t")
    assert runner.on_the_loop(small_add, SMALL)
    assert not runner.on_the_loop(big_add, SMALL)
    assert not runner.on_the_loop(copying, SMALL)  # a copy may add up to max_added_bytes
    assert copying.max_added_bytes == 4096


@pytest.mark.parametrize("field", ["max_added_bytes", "thread_above_bytes", "workers"])
def test_limits_are_positive(field: str) -> None:
    with pytest.raises(ValueError, match=f"{field} must be positive"):
        FilterLimits(**{field: 0})
