"""Large JSON answers parsed with the cyclic garbage collector paused (`collector`).

Parsing a big answer (a backend's 5 MB list) makes a million new containers; every few hundred of them
started a collection, the full ones walking every object the process holds, so the collector took two
thirds of the parse's time (170 ms instead of 50 ms for 5.6 MB), all of it holding the interpreter: the
event loop answers nothing else meanwhile, and a worker thread would not help (the parse is one C call).
Small documents are parsed as they are. The gateway parses the largest answers on its loop no more (from
`ShapingLimits.large_from_bytes`: a shaping process does, `apimcp.shaping`); what is parsed here, with the
collector paused from 64 KiB, is the medium ones, and whatever a shaping process parses.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from apimcp.safety.collector import collector_paused

PAUSE_FROM_BYTES: Final = 64 * 1024


def parse_json(data: bytes | str) -> Any:
    """`orjson.loads(data)`, with the collector paused when `data` is large."""
    if len(data) < PAUSE_FROM_BYTES:
        return orjson.loads(data)
    with collector_paused():
        return orjson.loads(data)
