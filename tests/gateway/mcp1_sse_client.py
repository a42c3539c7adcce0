"""An old client of the 2024-11-05 HTTP+SSE transport: run by `.venv-mcp1/bin/python` (the last mcp 1.x, which
`scripts/setup.sh --test` installs), never imported by the tests. Usage: mcp1_sse_client.py SSE_URL (the API key in
$MCP_API_KEY); prints what it saw as one JSON object."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import sys
from typing import Any

from mcp import ClientSession
from mcp.client.sse import sse_client


async def main(url: str) -> dict[str, Any]:
    session_ids: list[str] = []
    headers = {"Authorization": f"Bearer {os.environ['MCP_API_KEY']}"}
    async with (
        sse_client(url, headers=headers, on_session_created=session_ids.append) as (read, write),
        ClientSession(read, write) as session,
    ):
        initialized = await session.initialize()
        listed = await session.list_tools()
        called = await session.call_tool("get_item", {"itemId": "5"})
    return {
        "mcp": importlib.metadata.version("mcp"),
        "protocolVersion": initialized.protocolVersion,
        "server": initialized.serverInfo.name,
        "sessionIds": session_ids,
        "tools": sorted(tool.name for tool in listed.tools),
        "isError": called.isError,
        "structuredContent": called.structuredContent,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1]))))
