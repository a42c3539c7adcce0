"""The error every importer raises for a description it cannot use."""

from __future__ import annotations

from apimcp.safety.shown_urls import shown_location


class SpecError(Exception):
    """An API description that cannot be imported, naming the document and where in it."""

    def __init__(self, message: str, *, source: str | None = None, pointer: str | None = None) -> None:
        """`source`: the description's file or URL, shown without the URL's credentials or query values."""
        self.message = message
        self.source = shown_location(source) if source else source
        self.pointer = pointer
        where = self.source or "the description"
        if pointer:
            where += f" at {pointer}"
        super().__init__(f"{where}: {message}")
