"""The error every importer raises for a description it cannot use."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from apimcp.safety.shown_urls import shown_location

log = logging.getLogger("apimcp.importers")


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


@contextmanager
def unreadable_as_spec_errors(source: str) -> Iterator[None]:
    """Whatever else an importer raises on a description it was not written for is a SpecError too: a chain of
    definitions deeper than Python recurses, a value of a kind no check expected. The caller gets an error about
    the description (an upload a 422, not a 500); the log keeps where it failed, for a check to be added."""
    try:
        yield
    except RecursionError:
        raise SpecError("it nests or chains its definitions too deeply to import", source=source) from None
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
        log.warning("importing %s failed on a value it did not expect", shown_location(source), exc_info=True)
        message = f"it holds a value of a kind this importer cannot read ({type(exc).__name__})"
        raise SpecError(message, source=source) from None
