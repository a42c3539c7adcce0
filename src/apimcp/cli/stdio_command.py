"""`apimcp stdio URL`: serve a stdio MCP client (a desktop app) from a Streamable HTTP endpoint."""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer

from apimcp.cli.common import EXIT_USAGE, fail
from apimcp.cli.mcp_commands import ApiKey, Endpoint

Headers = Annotated[
    list[str],
    typer.Option("--header", help="A header every request carries, 'Name: value' (repeat for several)."),
]


def stdio(url: Endpoint, api_key: ApiKey = None, header: Headers = []) -> None:
    """Bridge stdin and stdout (an MCP client's stdio transport) to an MCP endpoint, in the client's era.

    For a desktop client's configuration: {"command": "apimcp", "args": ["stdio", "<URL>"]}. Logs go to stderr.
    """
    from apimcp.bridge.bridge import run_stdio  # noqa: PLC0415
    from apimcp.servers.event_loop import run_async  # noqa: PLC0415

    if not url.startswith(("http://", "https://")):
        fail(f"the endpoint must be an http(s) URL, not {url!r}", EXIT_USAGE)
    headers: dict[str, str] = {}
    for given in header:
        name, sep, value = given.partition(":")
        if not sep or not name.strip() or any(c in given for c in "\r\n"):
            fail(f"--header {given!r}: give 'Name: value'", EXIT_USAGE)
        headers[name.strip()] = value.strip()
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="apimcp stdio: %(message)s")
    run_async(run_stdio(url, headers))
