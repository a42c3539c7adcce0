"""Large JSON answers parsed without the cyclic garbage collector running meanwhile.

Parsing a big answer (a backend's 5 MB list) makes a million new containers; every few hundred of them
start a collection, and the full ones walk every object the process holds, so the collector took two
thirds of the parse's time (170 ms instead of 50 ms for 5.6 MB), all of it holding the interpreter:
the event loop answers nothing else meanwhile, and a worker thread would not help (the parse is one
C call). JSON cannot make reference cycles, so nothing is lost by pausing the collector for the parse;
it runs again at the next allocation after it. Small documents are parsed as they are.
"""

from __future__ import annotations

import gc
from typing import Any, Final

import orjson

PAUSE_FROM_BYTES: Final = 64 * 1024


def parse_json(data: bytes | str) -> Any:
    """`orjson.loads(data)`, with the collector paused when `data` is large (and the collector on)."""
    if len(data) < PAUSE_FROM_BYTES or not gc.isenabled():
        return orjson.loads(data)
    gc.disable()
    try:
        return orjson.loads(data)
    finally:
        gc.enable()
