"""Where output filters run: small results on the event loop, large ones in a bounded pool of threads.

Filtering is pure Python (retention's walk, patches, the TOON encoder): turning a 5.6 MB answer into
TOON took 1.2 s, and on the event loop every other request of every exposition waited for it. A result
whose text, with what the filter's patches may add to it, reaches `thread_above_bytes` is filtered in
one of `workers` threads instead, with the cyclic collector paused (`safety.collector`: its full
collections, started by the filter's allocations, held the interpreter 100 to 200 ms each). The
interpreter hands control between threads every few milliseconds (`sys.getswitchinterval`), so the
loop goes on serving while a big result is filtered; the filter itself runs no faster. Nearly every
result is small, and filtered on the loop as before: handing it to a thread would cost more than
filtering it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from apimcp.artifacts.output_filters import DEFAULT_MAX_ADDED_BYTES, OutputFilter
from apimcp.protocol.models import NO_VALUE, CallToolResult, TextContent
from apimcp.safety.collector import collector_paused


@dataclass(frozen=True, slots=True)
class FilterLimits:
    """What output filters may cost (`APIMCP_FILTERS_*`)."""

    max_added_bytes: int = DEFAULT_MAX_ADDED_BYTES
    """What one filter's patches may add to a result, about as JSON bytes; past it the filter fails open."""
    thread_above_bytes: int = 32 * 1024
    """Results this large (their text, with what the patches may add) are filtered in a worker thread."""
    workers: int = 2
    """Threads filtering large results; more wait for one."""

    def __post_init__(self) -> None:
        for name in ("max_added_bytes", "thread_above_bytes", "workers"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")


class FilterRunner:
    """Compiles and applies one gateway's output filters; owns the worker threads (started when first needed)."""

    def __init__(self, limits: FilterLimits | None = None) -> None:
        self.limits = limits or FilterLimits()
        self._pool: ThreadPoolExecutor | None = None

    def compile(self, spec: Mapping[str, Any], tool: str) -> OutputFilter:
        """`OutputFilter.from_spec` within these limits (FilterError for a spec that does not compile)."""
        return OutputFilter.from_spec(spec, tool=tool, max_added_bytes=self.limits.max_added_bytes)

    def on_the_loop(self, output_filter: OutputFilter, result: CallToolResult) -> bool:
        """Whether filtering `result` is cheap enough for the event loop."""
        return _text_size(result) + output_filter.patch.most_added(output_filter.max_added_bytes) < (
            self.limits.thread_above_bytes
        )

    async def apply(self, output_filter: OutputFilter, result: CallToolResult) -> CallToolResult:
        if result.is_error or output_filter.does_nothing or self.on_the_loop(output_filter, result):
            return output_filter.apply(result)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.limits.workers, thread_name_prefix="apimcp-filter")
        return await asyncio.get_running_loop().run_in_executor(self._pool, _apply, output_filter, result)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def _apply(output_filter: OutputFilter, result: CallToolResult) -> CallToolResult:
    # the collections that its allocations would start walk every object, holding the interpreter
    with collector_paused():
        return output_filter.apply(result)


def _text_size(result: CallToolResult) -> int:
    """The characters of the result's text blocks; structured content without text counts as large."""
    size = sum(len(block.text) for block in result.content if isinstance(block, TextContent))
    if size == 0 and result.structured_content is not NO_VALUE:
        return 1 << 62
    return size
