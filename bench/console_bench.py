"""The web console's render times with a 1,000-operation service and a 1,000-tool Try it, in Chromium.

    .venv/bin/python -m bench.console_bench --rounds 7 [--operations 1000]

Starts `apimcp serve` (a fresh data directory), imports a generated description of N operations, exposes it on a
backend answering every call, then measures in the page (performance.now, see tests/browser/test_console_scale.py):
the service's screen (its REST calls, its first page of operations drawn), the next page, the whole table of every
operation as the screen drew it before pages (for comparison), Try it's screen, listing the tools and drawing the
picker, and typing a search into it. Prints the median of each figure over the rounds (a first round warms up).
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.browser.conftest import Served, log_in
from tests.browser.test_console_scale import expose_many, measure, report, things_backend
from tests.support.browser import chromium
from tests.support.live_server import live_app

from apimcp.embedded import EmbeddedApp, embedded
from apimcp.protocol import EndpointOptions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--operations", type=int, default=1000)
    args = parser.parse_args()
    found: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as data_dir:

        @asynccontextmanager
        async def app() -> AsyncIterator[EmbeddedApp]:
            async with embedded(Path(data_dir), database_url=None, options=EndpointOptions()) as started:
                assert started.bootstrap_token is not None
                found["token"] = started.bootstrap_token
                yield started.app

        backend = things_backend()
        with live_app(app) as base, chromium() as browser:
            served = Served(base, found["token"], next(backend))
            many = expose_many(served, served.backend, args.operations)
            page = browser.new_context().new_page()
            log_in(page, served)
            figures = measure(page, many, args.rounds)
        next(backend, None)
    print(f"console render times, {args.operations} operations, median of {args.rounds} rounds (ms):")
    print(report(figures))


if __name__ == "__main__":
    main()
