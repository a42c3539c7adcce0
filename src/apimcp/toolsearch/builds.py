"""Where indexes' vectors are built: one daemon thread per process, jobs in turn. Embedding GitHub's 1,223
tools takes about 50 s of one core (40 ms a text of some 90 tokens); on the event loop that would stall every
request, and several builds at once would only fight over the cores. onnxruntime releases the GIL while it
runs, so the loop goes on meanwhile (its lag stays under 10 ms at p99, measured)."""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Builds:
    def __init__(self) -> None:
        self._forget()
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        """A forked child has no building thread (workers fork before they build anything; were a build under
        way, its index would stay lexical in the child): it starts its own with its first job."""
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._thread is None:
                # A daemon: a process that stops mid-build is not held up; the work is only a cache's.
                self._thread = threading.Thread(target=self._run, name="apimcp-tool-vectors", daemon=True)
                self._thread.start()
        self._jobs.put(job)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job()
            except Exception:
                log.exception("tool search: building an index's vectors failed; it stays lexical")


BUILDS = Builds()
