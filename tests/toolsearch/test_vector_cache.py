"""Vectors cached by content: a text already embedded (by any index of the process) is not embedded again, a
different model's vectors never answer, and the cache stays within its bytes."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import pytest

np = pytest.importorskip("numpy", reason="the search extra is not installed (scripts/setup.sh --test installs it)")

from apimcp.toolsearch.vector_cache import ENTRY_OVERHEAD, VectorCache  # noqa: E402


class Counting:
    """A stand-in model: a unit vector from a text's hash, and a record of every text it embedded."""

    def __init__(self, model_id: str = "fake:1") -> None:
        self.model_id = model_id
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        rows = np.stack([np.frombuffer(hashlib.sha256(t.encode()).digest(), dtype=np.uint8) for t in texts])
        rows = rows.astype(np.float32) + 1
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_a_text_is_embedded_once() -> None:
    cache, model = VectorCache(), Counting()
    first = cache.embed(model, ["merge a pull request", "list issues", "merge a pull request"])
    assert model.seen == ["merge a pull request", "list issues"]  # duplicates within a call: once
    again = cache.embed(model, ["list issues", "merge a pull request"])
    assert model.seen == ["merge a pull request", "list issues"] and cache.embedded == 2
    np.testing.assert_array_equal(again, first[[1, 0]])
    assert first.shape == (3, 32) and first.dtype == np.float32


def test_another_model_embeds_anew() -> None:
    cache, one, other = VectorCache(), Counting("fake:1"), Counting("fake:2")
    cache.embed(one, ["list issues"])
    cache.embed(other, ["list issues"])
    assert one.seen == other.seen == ["list issues"] and len(cache) == 2


def test_bounded_in_bytes_least_recently_used_first() -> None:
    entry = 32 * 4 + ENTRY_OVERHEAD
    cache, model = VectorCache(max_bytes=3 * entry), Counting()
    cache.embed(model, ["a", "b", "c"])
    cache.embed(model, ["a"])  # used again: "b" is now the oldest
    cache.embed(model, ["d"])
    assert len(cache) == 3 and cache.bytes <= cache.max_bytes
    model.seen.clear()
    cache.embed(model, ["a", "c", "d", "b"])
    assert model.seen == ["b"]
