"""One measured import of an OpenAPI description into MCP tools, in a fresh process.

    python -m bench.import_one apimcp|fastmcp SPEC.json

Prints one JSON line: seconds to turn the file into a listed set of MCP tools (after the
libraries are imported), the number of tools, and the process's peak RSS.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any


def _apimcp(path: str) -> tuple[int, float]:
    from apimcp.backends.base import Backend  # noqa: PLC0415 - imports are measured separately
    from apimcp.gateway.exposition import ExpositionHandler, ExpositionSettings, ToolSet  # noqa: PLC0415
    from apimcp.importers.openapi import import_openapi  # noqa: PLC0415
    from apimcp.protocol import dialects  # noqa: PLC0415
    from apimcp.protocol.versions import LATEST_REVISION  # noqa: PLC0415

    class _Unused(Backend):
        async def call(self, operation: Any, arguments: Any) -> Any:
            raise NotImplementedError

    started = time.perf_counter()
    service = import_openapi(path)
    backend = _Unused()
    handler = ExpositionHandler(ExpositionSettings(name="bench"), [(ToolSet(service.operations), backend)])
    page = asyncio.run(handler.list_tools(None, None))  # type: ignore[arg-type]
    listed = dialects.tools_page(page, LATEST_REVISION)
    _ = listed["tools"]
    return len(page.items), time.perf_counter() - started


def _fastmcp(path: str) -> tuple[int, float]:
    import httpx2  # noqa: PLC0415
    from fastmcp import FastMCP  # noqa: PLC0415

    started = time.perf_counter()
    with Path(path).open("rb") as handle:
        spec = json.load(handle)
    server = FastMCP.from_openapi(spec, client=httpx2.AsyncClient(base_url="http://127.0.0.1:9"))
    tools = asyncio.run(server.list_tools())
    return len(tools), time.perf_counter() - started


def main() -> None:
    which, path = sys.argv[1], sys.argv[2]
    imports_started = time.perf_counter()
    if which == "apimcp":
        import apimcp.gateway.exposition  # noqa: PLC0415
        import apimcp.importers.openapi  # noqa: F401, PLC0415

        run = _apimcp
    else:
        import fastmcp  # noqa: F401, PLC0415

        run = _fastmcp
    import_seconds = time.perf_counter() - imports_started
    tools, seconds = run(path)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"tools": tools, "seconds": seconds, "import_seconds": import_seconds, "peak_rss_mb": peak}))


if __name__ == "__main__":
    main()
