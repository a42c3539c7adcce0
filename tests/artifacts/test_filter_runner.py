"""Where output filters run: on the event loop for small results, in a shaping process for large ones, with the
result the loop would have made."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson
import pytest

from apimcp.artifacts.filter_runner import FilterLimits, FilterRunner
from apimcp.protocol import dialects
from apimcp.protocol.models import NO_VALUE, CallToolResult, RawJson, TextContent
from apimcp.protocol.versions import ALL_REVISIONS
from apimcp.shaping.limits import ShapingLimits
from apimcp.shaping.pool import Done, Job, ShapingPool, ShapingUnavailable
from tests.artifacts.test_output_filters import deep_list
from tests.shaping.recording import Recording

LIMITS = FilterLimits(max_added_bytes=4096, process_from_bytes=1000)


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


@pytest.mark.parametrize("field", ["max_added_bytes", "process_from_bytes"])
def test_limits_are_positive(field: str) -> None:
    with pytest.raises(ValueError, match=f"{field} must be positive"):
        FilterLimits(**{field: 0})


@pytest.fixture(scope="module")
def pool() -> Iterator[ShapingPool]:
    shaping = ShapingPool(ShapingLimits(workers=1))
    yield shaping
    shaping.close()


ROWS = {"rows": [{"id": n, "name": f"row {n}", "tags": ["a"]} for n in range(300)]}
SPECS: list[dict[str, Any]] = [
    {"jsonRetain": ["/rows/name"]},
    {"jsonRetain": ["/rows/id"], "convertToToon": True},
    {"jsonPatches": [{"op": "add", "path": "/note", "value": "shaped"}, {"op": "remove", "path": "/rows/0"}]},
    {"convertToToon": True},
]
SOURCES = {
    "value": structured(ROWS),
    "raw": CallToolResult(
        content=(TextContent(text=orjson.dumps(ROWS).decode()),), structured_content=RawJson(data=orjson.dumps(ROWS))
    ),
    "text only": CallToolResult(content=(TextContent(text=orjson.dumps(ROWS).decode()), TextContent(text="note"))),
}


def wire(result: CallToolResult) -> list[bytes]:
    return [orjson.dumps(dialects.call_tool_result(result, rev)) for rev in ALL_REVISIONS]


@pytest.mark.parametrize("spec", SPECS, ids="+".join)
@pytest.mark.parametrize("source", SOURCES)
def test_a_large_result_is_filtered_in_a_shaping_process_as_the_loop_would_filter_it(
    pool: ShapingPool, spec: dict[str, Any], source: str
) -> None:
    shaper = Recording(pool)
    runner = FilterRunner(LIMITS, shaper)
    output_filter = runner.compile(spec, "t")
    result = SOURCES[source]
    filtered = asyncio.run(runner.apply(output_filter, result))
    assert len(shaper.pids) == 1 and shaper.pids[0] != os.getpid()
    expected = output_filter.apply(result)  # what the loop makes of it
    assert wire(filtered) == wire(expected)
    if source == "text only":
        assert filtered.structured_content is NO_VALUE
    else:
        assert isinstance(filtered.structured_content, RawJson)  # it stays serialized on its way to the client


def test_a_filter_that_fails_in_a_shaping_process_fails_open(
    pool: ShapingPool, caplog: pytest.LogCaptureFixture
) -> None:
    runner = FilterRunner(LIMITS, pool)
    failing = runner.compile({"jsonPatches": [{"op": "test", "path": "/rows/0/id", "value": 99}]}, "t")
    with caplog.at_level(logging.WARNING, "apimcp.artifacts"):
        assert asyncio.run(runner.apply(failing, SOURCES["raw"])) is SOURCES["raw"]
    assert "output filter of tool 't' not applied: jsonPatches[0]" in caplog.text


def test_toon_far_larger_than_the_json_fails_open_in_a_shaping_process_too(
    pool: ShapingPool, caplog: pytest.LogCaptureFixture
) -> None:
    """A 5 MB answer of that shape would have made 800 MB of TOON there."""
    answer = deep_list()
    result = CallToolResult(
        content=(TextContent(text=orjson.dumps(answer).decode()),),
        structured_content=RawJson(data=orjson.dumps(answer)),
    )
    runner = FilterRunner(LIMITS, pool)
    with caplog.at_level(logging.WARNING, "apimcp.artifacts"):
        assert asyncio.run(runner.apply(runner.compile({"convertToToon": True}, "t"), result)) is result
    assert "output filter of tool 't' not applied: convertToToon: the TOON text would pass" in caplog.text


def test_a_large_result_the_shaping_processes_cannot_take_is_an_error_result() -> None:
    class Busy:
        async def run(self, job: Job, args: Mapping[str, Any], blobs: Sequence[bytes] = ()) -> Done:
            raise ShapingUnavailable("The gateway is shaping as many large results as it can")

    runner = FilterRunner(LIMITS, Busy())
    result = asyncio.run(runner.apply(runner.compile({"convertToToon": True}, "t"), SOURCES["raw"]))
    assert result.is_error
    assert [block.text for block in result.content if isinstance(block, TextContent)] == [
        "The gateway is shaping as many large results as it can"
    ]
