"""The cyclic garbage collector paused while JSON-shaped work builds many objects (none of them in cycles).

A full collection walks every object the process holds, and holds the interpreter while it does: with
a 5.6 MB answer alive (a million objects), each one took 100 to 200 ms, and work that allocates a lot
(parsing the answer, retaining its branches, writing it as TOON) started several, in whichever thread
allocated, so the event loop waited for each even when the work ran in a worker thread. JSON values
hold no reference cycles, so nothing that work makes needs the collector; what the rest of the process
leaves meanwhile is collected once the pause ends (the next allocation starts a collection).

Pauses are counted across threads: the collector resumes when the last pauser is done. Joining a pause
that began more than `MAX_PAUSE_SECONDS` ago is refused (that work runs with the collector on, once the
earlier pausers are done), so overlapping work cannot keep it paused for long; and a collector that
someone else turned off is left to them.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

MAX_PAUSE_SECONDS: Final = 1.0


class _Pause:
    __slots__ = ("holders", "lock", "since")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.holders = 0
        self.since = 0.0


_PAUSE = _Pause()


@contextmanager
def collector_paused() -> Iterator[None]:
    """The block runs with the cyclic collector paused (see the module's doc for when it is not)."""
    pause = _PAUSE
    with pause.lock:
        if pause.holders:
            joined = time.monotonic() - pause.since < MAX_PAUSE_SECONDS
        elif gc.isenabled():
            gc.disable()
            pause.since = time.monotonic()
            joined = True
        else:
            joined = False
        if joined:
            pause.holders += 1
    try:
        yield
    finally:
        if joined:
            with pause.lock:
                pause.holders -= 1
                if not pause.holders:
                    gc.enable()
