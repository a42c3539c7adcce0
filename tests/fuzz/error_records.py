"""What the fuzzed servers log: every record at ERROR or above, and any record carrying a traceback."""

from __future__ import annotations

import logging


class ErrorRecords(logging.Handler):
    """Keeps every record at ERROR or above, and any record carrying a traceback."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.exc_info:
            self.records.append(record)
