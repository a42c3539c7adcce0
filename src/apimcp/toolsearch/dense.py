"""The dense side of a tool index: its tools' unit vectors, a row each, so that a query's cosine similarity with
every tool is one matrix-vector product (GitHub's 1,223 tools: 1.8 MB of float32, 0.1 ms).

Needs numpy (the `search` extra): imported only where embeddings are."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet

import numpy as np
from numpy.typing import NDArray

from apimcp.toolsearch.embedding import Embedder
from apimcp.toolsearch.vector_cache import VectorCache

CHUNK = 64
"""Texts embedded between two looks at whether the index is still wanted (about 1 s of work)."""


class DenseIndex:
    def __init__(self, embedder: Embedder, names: Sequence[str], matrix: NDArray[np.float32]) -> None:
        self._embedder = embedder
        self.names = tuple(names)
        self._rows = {name: row for row, name in enumerate(self.names)}
        self.matrix = matrix

    @property
    def nbytes(self) -> int:
        return int(self.matrix.nbytes)

    def rank(self, query: str, depth: int, allowed: AbstractSet[str] | None = None) -> list[tuple[str, float]]:
        """The `depth` tools nearest to `query` in meaning (those in `allowed` only, when given), with their
        cosine similarity, nearest first. Embeds the query: milliseconds of CPU."""
        if allowed is None:
            rows = None
            matrix = self.matrix
        else:
            rows = np.array(sorted(self._rows[name] for name in allowed if name in self._rows), dtype=np.intp)
            matrix = self.matrix[rows]
        count = min(depth, len(matrix))
        if count <= 0:
            return []
        # Not `matrix @ vector`: BLAS would wake threads of its own, whose spinning costs more than the product.
        scores = np.einsum("ij,j->i", matrix, self._embedder.embed([query])[0])
        top = np.argpartition(-scores, count - 1)[:count]
        top = top[np.argsort(-scores[top], kind="stable")]
        found = top if rows is None else rows[top]
        return [(self.names[row], float(scores[at])) for row, at in zip(found, top, strict=True)]


def build_dense(
    embedder: Embedder, cache: VectorCache, names: Sequence[str], texts: Sequence[str], wanted: Callable[[], bool]
) -> DenseIndex | None:
    """The vectors of `texts` (a tool's each, in the order of `names`), through `cache`; None as soon as
    `wanted()` says the index is not wanted any more (its exposition was replaced)."""
    parts = []
    for start in range(0, len(texts), CHUNK):
        if not wanted():
            return None
        parts.append(cache.embed(embedder, texts[start : start + CHUNK]))
    if not parts:
        return None
    return DenseIndex(embedder, names, np.ascontiguousarray(np.concatenate(parts), dtype=np.float32))
