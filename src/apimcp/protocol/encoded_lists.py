"""List pages encoded once per revision, within a memory bound.

A big list (GitHub's 1,223 tools: about 6 MB of JSON) is served by copying bytes encoded once for each
revision's shape. Entries go with their page (a snapshot swap drops the old pages) and, beyond
`max_bytes` together, the least recently served go first: an exposition that is rarely listed pays an
encoding again rather than holding memory for ever.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable

import orjson

DEFAULT_MAX_BYTES = 256 * 1024 * 1024

_Key = tuple[int, int]


class EncodedLists:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes <= 0:
            raise ValueError("max_bytes must be positive")
        self.max_bytes = max_bytes
        self._entries: OrderedDict[_Key, tuple[weakref.ref[object], orjson.Fragment, int]] = OrderedDict()
        self._dead: list[_Key] = []  # pages collected since: dropped at the next call (a GC callback must not
        self._bytes = 0  # touch the dict while it may be mid-update)

    @property
    def kept_bytes(self) -> int:
        self._sweep()
        return self._bytes

    def __len__(self) -> int:
        self._sweep()
        return len(self._entries)

    def get(self, page: object, rank: int, encode: Callable[[], bytes]) -> orjson.Fragment:
        """The encoding of `page` for revision `rank`, made by `encode` the first time."""
        self._sweep()
        key = (id(page), rank)
        entry = self._entries.get(key)
        if entry is not None and entry[0]() is page:
            self._entries.move_to_end(key)
            return entry[1]
        data = encode()
        fragment = orjson.Fragment(data)
        if entry is not None:  # a page that died, whose id a new one took before the sweep
            self._forget(key)
        self._entries[key] = (weakref.ref(page, self._mourner(key)), fragment, len(data))
        self._bytes += len(data)
        while self._bytes > self.max_bytes and len(self._entries) > 1:
            self._forget(next(iter(self._entries)))
        return fragment

    def _mourner(self, key: _Key) -> Callable[[weakref.ref[object]], None]:
        def collected(_: weakref.ref[object]) -> None:
            self._dead.append(key)

        return collected

    def _sweep(self) -> None:
        while self._dead:
            key = self._dead.pop()
            entry = self._entries.get(key)
            if entry is not None and entry[0]() is None:
                self._forget(key)

    def _forget(self, key: _Key) -> None:
        _, _, size = self._entries.pop(key)
        self._bytes -= size
