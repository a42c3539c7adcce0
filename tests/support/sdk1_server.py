"""An MCP server built with an old release of the official Python SDK (1.x, FastMCP), for federation tests.

Run by that release's own venv (`.venv-mcp-1.8.1`, `.venv-mcp-1.10.1`, `.venv-mcp1`: scripts/setup.sh --test),
never imported by the test suite: `python sdk1_server.py PORT streamable-http|sse`, or `python sdk1_server.py 0
stdio` (then two more tools: `about`, what the process is and sees, and `crash`, which ends it).
"""

import hashlib
import os
import sys

import anyio
import uvicorn
from mcp.server.fastmcp import Context, FastMCP

server = FastMCP("old-sdk")


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool()
async def count_slowly(upto: int, ctx: Context) -> str:  # type: ignore[type-arg]
    """Count to a number, telling progress (a step takes a moment, as real work does)."""
    for step in range(1, upto + 1):
        await ctx.report_progress(step, upto)
        await anyio.sleep(0.1)
    return f"counted to {upto}"


@server.tool()
async def wait(ctx: Context) -> str:  # type: ignore[type-arg]
    """Wait long, telling it has started; a cancellation is written to the file APIMCP_TEST_MARK names."""
    await ctx.report_progress(1, 2)
    try:
        await anyio.sleep(30)
    except anyio.get_cancelled_exc_class():
        # written whole, then moved into place: a test that sees the file must never read it half written
        path = os.environ["APIMCP_TEST_MARK"]
        with open(f"{path}.part", "w") as mark:  # noqa: ASYNC230 - no await may run: it is cancelled
            mark.write("cancelled")
        os.replace(f"{path}.part", path)
        raise
    return "waited"


@server.prompt()
def greet(who: str) -> str:
    """Greet someone."""
    return f"Say hello to {who}"


@server.resource("notes://first")
def first_note() -> str:
    """The first note."""
    return "remember the milk"


def about(variable: str) -> str:
    """The process id, the working folder, the value of an environment variable ("" when unset) and its sha256."""
    value = os.environ.get(variable, "")
    return f"{os.getpid()} {os.getcwd()} {value} {hashlib.sha256(value.encode()).hexdigest()}"


def crash() -> str:
    """End the server's process at once (noted in the file APIMCP_TEST_CRASHES names, if any)."""
    if "APIMCP_TEST_CRASHES" in os.environ:
        with open(os.environ["APIMCP_TEST_CRASHES"], "a") as noted:
            noted.write("crash\n")
    os._exit(3)


if __name__ == "__main__":
    port, transport = int(sys.argv[1]), sys.argv[2]
    if transport == "stdio":
        server.tool()(about)
        server.tool()(crash)
        server.run("stdio")
        sys.exit(0)
    app = server.streamable_http_app() if transport == "streamable-http" else server.sse_app()
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
