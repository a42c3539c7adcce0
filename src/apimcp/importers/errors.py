"""The error every importer raises for a description it cannot use."""

from __future__ import annotations


class SpecError(Exception):
    """An API description that cannot be imported, naming the document and where in it."""

    def __init__(self, message: str, *, source: str | None = None, pointer: str | None = None) -> None:
        self.message = message
        self.source = source
        self.pointer = pointer
        where = source or "the description"
        if pointer:
            where += f" at {pointer}"
        super().__init__(f"{where}: {message}")
