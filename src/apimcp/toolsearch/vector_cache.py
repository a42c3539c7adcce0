"""Vectors by content: the sha256 of the model's id and a text names the text's vector, so a snapshot applied
again, or expositions sharing tools, embed each text once per process. Least recently used vectors go first
past a bound in bytes (64 MiB by default: some 38,000 tools' vectors of 384 float32).

Needs numpy (the `search` extra): imported only where embeddings are."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from apimcp.toolsearch.embedding import Embedder

DEFAULT_MAX_BYTES = 64 * 2**20
ENTRY_OVERHEAD = 200
"""Bytes an entry costs beside its vector's data: the key, the array object, the dictionary's slot."""


class VectorCache:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self.embedded = 0
        """Texts embedded through this cache: the misses."""
        self._vectors: OrderedDict[bytes, NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()  # builds run in a worker thread, searches in others

    def __len__(self) -> int:
        return len(self._vectors)

    def embed(self, embedder: Embedder, texts: Sequence[str]) -> NDArray[np.float32]:
        """The texts' vectors, a row each; only those not cached are embedded (in one call)."""
        keys = [_key(embedder.model_id, text) for text in texts]
        found: dict[bytes, NDArray[np.float32]] = {}
        with self._lock:
            for key in keys:
                vector = self._vectors.get(key)
                if vector is not None:
                    self._vectors.move_to_end(key)
                    found[key] = vector
        missing = list({key: text for key, text in zip(keys, texts, strict=True) if key not in found}.items())
        if missing:
            fresh = embedder.embed([text for _, text in missing])
            with self._lock:
                self.embedded += len(missing)
                for (key, _), vector in zip(missing, fresh, strict=True):
                    found[key] = kept = vector.copy()  # a row of its own: the batch's matrix is not kept alive
                    self._store(key, kept)
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([found[key] for key in keys])

    def _store(self, key: bytes, vector: NDArray[np.float32]) -> None:
        old = self._vectors.pop(key, None)
        if old is not None:
            self.bytes -= old.nbytes + ENTRY_OVERHEAD
        self._vectors[key] = vector
        self.bytes += vector.nbytes + ENTRY_OVERHEAD
        while self.bytes > self.max_bytes and self._vectors:
            _, evicted = self._vectors.popitem(last=False)
            self.bytes -= evicted.nbytes + ENTRY_OVERHEAD


def _key(model_id: str, text: str) -> bytes:
    return hashlib.sha256(f"{model_id}\0{text}".encode()).digest()


SHARED = VectorCache()
"""The process's: every exposition's index embeds through it."""
