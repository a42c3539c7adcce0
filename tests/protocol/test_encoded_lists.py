"""Encoded list pages: encoded once per page and revision, dropped with their page, and kept within a
memory bound, the least recently served first."""

from __future__ import annotations

import gc

from apimcp.protocol.encoded_lists import EncodedLists


class Page:
    """Stands for a list page: any object that can be referenced weakly."""


def test_a_page_is_encoded_once_per_revision() -> None:
    lists, page, calls = EncodedLists(), Page(), []

    def encode() -> bytes:
        calls.append(1)
        return b"[1,2,3]"

    first = lists.get(page, 3, encode)
    assert lists.get(page, 3, encode) is first
    lists.get(page, 2, encode)
    assert len(calls) == 2 and lists.kept_bytes == 14


def test_entries_go_with_their_page() -> None:
    lists = EncodedLists()
    page = Page()
    lists.get(page, 3, lambda: b"x" * 100)
    del page
    gc.collect()
    assert len(lists) == 0 and lists.kept_bytes == 0


def test_beyond_the_bound_the_least_recently_served_go_first() -> None:
    lists = EncodedLists(max_bytes=250)
    pages = [Page() for _ in range(3)]
    for page in pages[:2]:
        lists.get(page, 3, lambda: b"x" * 100)
    lists.get(pages[0], 3, lambda: b"never called")  # served again: now the most recent
    lists.get(pages[2], 3, lambda: b"y" * 100)
    assert lists.kept_bytes == 200
    encoded_again: list[int] = []

    def encode() -> bytes:
        encoded_again.append(1)
        return b"x" * 100

    lists.get(pages[1], 3, encode)
    assert encoded_again == [1]  # it was the one dropped
