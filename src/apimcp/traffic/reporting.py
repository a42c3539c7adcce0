"""The gateway's side of traffic: its tally sent to the control plane every `INTERVAL_SECONDS`, in rows of at
most `BATCH`; what could not be sent is counted again with what comes next (the tally stays bounded)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from apimcp.traffic.tally import TrafficTally

log = logging.getLogger(__name__)
INTERVAL_SECONDS = 5.0
BATCH = 1000

Send = Callable[[list[dict[str, Any]]], Awaitable[None]]


class ReportRefused(Exception):
    """The control plane refused a report for what it holds: sent again, it would be refused again."""


async def send_once(tally: TrafficTally, send: Send) -> bool:
    """Send what the tally holds, batch by batch (one empty batch when it holds nothing: the report says the
    gateway is there, and which revision it serves); False when the control plane could not be reached."""
    rows = tally.take(BATCH)
    while True:
        try:
            await send(rows)
        except asyncio.CancelledError:
            tally.give_back(rows)
            raise
        except ReportRefused as exc:  # given back, it would be sent first again, and refused, for ever
            log.warning("traffic counts refused by the control plane (%s): %d rows dropped", exc, len(rows))
        except Exception as exc:
            tally.give_back(rows)
            log.info("traffic counts not delivered yet (%s); sent again later", exc)
            return False
        rows = tally.take(BATCH)
        if not rows:
            return True


async def report_traffic(tally: TrafficTally, send: Send) -> None:
    while True:
        await asyncio.sleep(INTERVAL_SECONDS)
        await send_once(tally, send)
