"""Search and pages on the REST API's lists: `q`, `limit` and `offset`, and the `X-Total-Count` header.

Every list route takes `page: ListPage` (the three query parameters, checked: a bad value is a 422 naming it) and
answers `page.of(items, response, text)`: the items whose text holds every word of `q` (case-insensitive), from
`offset`, at most `limit` of them, the number matched in the header. The body stays a JSON array, so that clients
which read whole lists keep working: the default limit is the largest, which an ordinary organization's lists
never reach.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, TypeVar

from fastapi import Depends, Query, Response

DEFAULT_LIMIT = 1000
MAX_LIMIT = 1000
MAX_OFFSET = 1_000_000
MAX_QUERY = 200
TOTAL_HEADER = "X-Total-Count"

T = TypeVar("T")
Text = Callable[[T], Iterable[object]]
"""The fields of an item a person would search (None and empty ones are skipped; a list's items each count)."""


@dataclass(frozen=True)
class Paging:
    q: str | None = None
    limit: int = DEFAULT_LIMIT
    offset: int = 0

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(self.q.casefold().split()) if self.q else ()

    def matches(self, fields: Iterable[object]) -> bool:
        words = self.words
        if not words:
            return True
        haystack = "\n".join(_flat(fields)).casefold()
        return all(word in haystack for word in words)

    def of(self, items: Iterable[T], response: Response, text: Text[T]) -> list[T]:
        """The page of `items` matching `q`; the number matched goes in `X-Total-Count`."""
        matched: Sequence[T] = [item for item in items if self.matches(text(item))] if self.words else list(items)
        response.headers[TOTAL_HEADER] = str(len(matched))
        return list(matched[self.offset : self.offset + self.limit])


def _flat(fields: Iterable[object]) -> Iterable[str]:
    for value in fields:
        if value is None:
            continue
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            yield from (f"{k}={v}" for k, v in value.items())
        elif isinstance(value, (list, tuple, set, frozenset)):
            yield from _flat(value)
        else:
            yield str(value)


def paging(
    q: Annotated[
        str | None,
        Query(
            max_length=MAX_QUERY,
            description="search: the items whose searchable fields hold every word of it, case-insensitive",
        ),
    ] = None,
    limit: Annotated[
        int, Query(ge=1, le=MAX_LIMIT, description=f"at most this many items (1 to {MAX_LIMIT})")
    ] = DEFAULT_LIMIT,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET, description="skip this many matching items first")] = 0,
) -> Paging:
    return Paging((q.strip() or None) if q is not None else None, limit, offset)


ListPage = Annotated[Paging, Depends(paging)]
"""A list route's `q`, `limit` and `offset` (the total matched is answered in `X-Total-Count`)."""
