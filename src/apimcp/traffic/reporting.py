"""The gateway's side of traffic: its tally sent to the control plane every `INTERVAL_SECONDS`, in reports of at
most `BATCH` rows; a report that could not be sent is sent again as it was, with its id (`traffic.outbox`), while
the tally counts what comes next."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from apimcp.traffic.outbox import Outbox, Report
from apimcp.traffic.tally import TrafficTally

log = logging.getLogger(__name__)
INTERVAL_SECONDS = 5.0
BATCH = 1000

Send = Callable[[list[dict[str, Any]], str], Awaitable[None]]
"""Sends rows under a report's id (the same id when they are sent again)."""


class ReportRefused(Exception):
    """The control plane refused a report for what it holds: sent again, it would be refused again."""


async def send_once(tally: TrafficTally, send: Send, outbox: Outbox) -> bool:
    """Send the report that waits in `outbox`, then what the tally holds, batch by batch (one empty batch when
    there is nothing: the report says the gateway is there, and which revision it serves); False when the control
    plane could not be reached (the report it was sent stays in `outbox`, to be sent again as it was)."""
    report = outbox.next(lambda: tally.take(BATCH))
    while True:
        try:
            await send(report.items, report.id)
        except asyncio.CancelledError:
            outbox.waiting = report
            raise
        except ReportRefused as exc:  # sent again, it would be refused again, for ever
            log.warning("traffic counts refused by the control plane (%s): %d rows dropped", exc, len(report.items))
        except Exception as exc:
            outbox.waiting = report
            log.info("traffic counts not delivered yet (%s); sent again later", exc)
            return False
        rows = tally.take(BATCH)
        if not rows:
            return True
        report = Report(rows)


async def report_traffic(tally: TrafficTally, send: Send, outbox: Outbox) -> None:
    while True:
        await asyncio.sleep(INTERVAL_SECONDS)
        await send_once(tally, send, outbox)
