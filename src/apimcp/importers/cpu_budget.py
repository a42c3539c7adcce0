"""The CPU time one import may take: its loops check it cooperatively, and past it the import fails."""

from __future__ import annotations

import time

from apimcp.importers.errors import SpecError

DEFAULT_MAX_CPU_SECONDS = 60.0
OPENAPI_SETTING = "schema limit max_cpu_seconds, APIMCP_SCHEMA_MAX_CPU_SECONDS"


class CpuBudget:
    """The CPU time left to one import, checked cooperatively by its loops (operations, definitions, schemas)."""

    __slots__ = ("_deadline", "_seconds", "_setting", "_source")

    def __init__(self, seconds: float, source: str | None = None, setting: str | None = OPENAPI_SETTING) -> None:
        """`setting`: what sets the bound, named in the error."""
        self._seconds = seconds
        self._source = source
        self._setting = setting
        # The thread's own CPU time: waiting for the GIL or for the network is not the import's doing.
        self._deadline = time.thread_time() + seconds

    def check(self) -> None:
        if time.thread_time() > self._deadline:
            named = f" ({self._setting})" if self._setting else ""
            message = f"the import needs more than the {self._seconds:g} s of CPU time allowed{named}"
            raise SpecError(message, source=self._source)
