"""The event loop a server runs on."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` on uvloop when it is installed (it is with uvicorn[standard]), else asyncio's loop.

    uvicorn picks uvloop only when it creates the loop itself; a gateway that starts its backend
    session and its server in one loop must pick it here, or lose about a third of its throughput.
    """
    try:
        import uvloop  # noqa: PLC0415 - optional speed-up
    except ImportError:
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)
