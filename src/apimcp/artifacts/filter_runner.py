"""Where output filters run: small results on the event loop, large ones in a shaping process.

Filtering is pure Python over the result's value (retention's walk, patches, the TOON encoder): turning a
5.6 MB answer into TOON took 1.2 s, and building, walking and freeing that value holds the interpreter in
whichever thread does it, so every other request of every exposition waited (in worker threads too: at
best they shared the interpreter with the loop). A result whose text, with what the filter's patches may add
to it, reaches `process_from_bytes`, or whose structured content arrives serialized (`RawJson`, a large
answer), is filtered by the gateway's shaper instead (`apimcp.shaping`): its JSON goes to a shaping process
with the filter's spec (compiled there once, known by its digest), and the filtered JSON and text come back as
bytes, the structured content staying `RawJson`. Nearly every result is small, and filtered on the loop as
before: sending it away would cost more than filtering it.

A filter still fails open wherever it runs (the result as it was, with a warning naming the step); a job the
shaping processes cannot run (too many waiting, too slow, a process that died) is an error result saying so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from apimcp.artifacts.output_filters import DEFAULT_MAX_ADDED_BYTES, FilterFailed, OutputFilter
from apimcp.protocol.models import NO_VALUE, CallToolResult, RawJson, TextContent
from apimcp.shaping.pool import INLINE, Shaper, ShapingUnavailable


@dataclass(frozen=True, slots=True)
class FilterLimits:
    """What output filters may cost (`APIMCP_FILTERS_*`)."""

    max_added_bytes: int = DEFAULT_MAX_ADDED_BYTES
    """What one filter's patches may add to a result, about as JSON bytes; past it the filter fails open."""
    process_from_bytes: int = 32 * 1024
    """Results this large (their text, with what the patches may add) are filtered in a shaping process."""

    def __post_init__(self) -> None:
        for name in ("max_added_bytes", "process_from_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")


class FilterRunner:
    """Compiles and applies one gateway's output filters; large results go to `shaper` (the gateway's shaping
    processes; in this process by default)."""

    def __init__(self, limits: FilterLimits | None = None, shaper: Shaper = INLINE) -> None:
        self.limits = limits or FilterLimits()
        self._shaper = shaper

    def using(self, shaper: Shaper) -> FilterRunner:
        """A runner with the same limits whose large results go to `shaper` (an exposition's lane of the pool)."""
        return FilterRunner(self.limits, shaper)

    def compile(self, spec: Mapping[str, Any], tool: str) -> OutputFilter:
        """`OutputFilter.from_spec` within these limits (FilterError for a spec that does not compile)."""
        return OutputFilter.from_spec(spec, tool=tool, max_added_bytes=self.limits.max_added_bytes)

    def on_the_loop(self, output_filter: OutputFilter, result: CallToolResult) -> bool:
        """Whether filtering `result` is cheap enough for the event loop."""
        return _size(result) + output_filter.patch.most_added(output_filter.max_added_bytes) < (
            self.limits.process_from_bytes
        )

    async def apply(self, output_filter: OutputFilter, result: CallToolResult) -> CallToolResult:
        if result.is_error or output_filter.does_nothing or self.on_the_loop(output_filter, result):
            return output_filter.apply(result)
        structured = result.structured_content
        if isinstance(structured, RawJson):
            data = structured.data
        elif structured is not NO_VALUE:
            data = orjson.dumps(structured)  # far quicker than building it was
        elif result.content and isinstance(result.content[0], TextContent):
            data = result.content[0].text.encode()
        else:
            return output_filter.apply(result)  # nothing to filter: it says so at once
        args = {"filter": output_filter.digest, "tool": output_filter.tool, "max_added": output_filter.max_added_bytes}
        try:
            done = await self._shaper.run(filter_job, args, [data, output_filter.spec])
        except ShapingUnavailable as exc:
            return CallToolResult(content=(TextContent(text=str(exc)),), is_error=True)
        if "failed" in done.reply:
            return output_filter.unapplied(result, done.reply["failed"])
        filtered = done.blobs[0]
        text = done.blobs[1] if output_filter.to_toon else filtered
        return output_filter.rebuilt(result, text.decode(), RawJson(data=filtered))


def _size(result: CallToolResult) -> int:
    """The characters of the result's text blocks, or the bytes of its serialized structured content if more;
    structured content without either counts as large."""
    size = sum(len(block.text) for block in result.content if isinstance(block, TextContent))
    structured = result.structured_content
    if isinstance(structured, RawJson):
        return max(size, len(structured.data))
    if size == 0 and structured is not NO_VALUE:
        return 1 << 62
    return size


# --- in a shaping process ------------------------------------------------------------------------

_filters: dict[str, OutputFilter] = {}
MAX_FILTERS: Final = 256


def filter_job(args: dict[str, Any], blobs: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
    """The job: `blobs` are the result's JSON and the filter's spec; back come the filtered JSON and, with TOON,
    the text (else the text is that JSON), or why the filter failed."""
    output_filter = _filters.get(args["filter"])
    if output_filter is None:
        if len(_filters) >= MAX_FILTERS:
            _filters.clear()
        spec = orjson.loads(blobs[1])
        output_filter = OutputFilter.from_spec(spec, tool=args["tool"], max_added_bytes=args["max_added"])
        _filters[args["filter"]] = output_filter
    try:
        value, text = output_filter.shape(orjson.loads(blobs[0]))
    except orjson.JSONDecodeError:
        return {"failed": "the result is not JSON"}, []
    except FilterFailed as failure:
        return {"failed": str(failure)}, []
    except Exception as exc:  # fail open, as on the loop
        return {"failed": f"{type(exc).__name__} while filtering"}, []
    filtered = orjson.dumps(value)
    return {}, [filtered, text.encode()] if output_filter.to_toon else [filtered]
