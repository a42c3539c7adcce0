from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from tests.fuzz.error_records import ErrorRecords


@pytest.fixture(scope="module")
def errors() -> Iterator[ErrorRecords]:
    """The error records of every logger while a fuzzing module runs."""
    handler = ErrorRecords()
    root = logging.getLogger()
    root.addHandler(handler)
    yield handler
    root.removeHandler(handler)
