"""Hybrid tool search: BM25 (`index.py`) and the cosine similarity of meanings (`dense.py`), fused by weighted
reciprocal ranks. Words find a tool the query names ("merge a pull request"), meanings one it describes in
other words ("give the ticket to Alice" for `issues_assign`), where BM25 finds nothing or only tools sharing a
stray word. So BM25's weight follows how much of the query it knows: the share of the query's words that some
tool's texts have, squared; a query in the API's own words gets BM25 at full weight (twice the model's: the
index's names and paths are precise), a query in other words mostly the model's ranking.

The index answers lexically at once, and with both sides once its tools' vectors are built in the background
(`builds.py`); without the `search` extra it is the lexical index itself (`build_index`)."""

from __future__ import annotations

import logging
import re
import threading
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING

from apimcp.protocol.models import Tool
from apimcp.toolsearch.builds import BUILDS, Builds
from apimcp.toolsearch.embedding import Embedder, available, shared_embedder
from apimcp.toolsearch.index import MAX_QUERY_WORDS, MAX_RESULTS, Hit, ToolIndex
from apimcp.toolsearch.words import words

if TYPE_CHECKING:
    from apimcp.toolsearch.dense import DenseIndex
    from apimcp.toolsearch.vector_cache import VectorCache

log = logging.getLogger(__name__)

RRF_K = 10
"""Reciprocal rank fusion's damping: a tool's share from a side is weight / (RRF_K + its rank there)."""
LEXICAL_WEIGHT = 2.0
"""At full coverage of the query's words; chosen on GitHub's 66 tasks and meaning_queries.QUERIES (tests), where
it keeps BM25's recall@5 on GitHub (0.939) and the model's on requests in other words."""
DENSE_WEIGHT = 1.0
DEPTH = MAX_RESULTS
"""Candidates taken from each side."""
DESCRIPTION_CHARS = 600
"""Of a description, what the model gets to read (it reads 128 tokens at most)."""
_IDENTIFIER = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def tool_text(tool: Tool) -> str:
    """What the model reads of a tool: its title, its name's words, the start of its description."""
    name = " ".join(part.lower() for part in _IDENTIFIER.findall(tool.name))
    return ". ".join(part for part in (tool.title, name, (tool.description or "")[:DESCRIPTION_CHARS]) if part)


def fuse(lexical: Sequence[Hit], dense: Sequence[tuple[str, float]], coverage: float, limit: int) -> list[Hit]:
    """`coverage`: the share of the query's words BM25 knows (0 to 1)."""
    scores: dict[str, float] = defaultdict(float)
    lexical_weight = LEXICAL_WEIGHT * coverage**2
    for rank, hit in enumerate(lexical, 1):
        scores[hit.name] += lexical_weight / (RRF_K + rank)
    for rank, (name, _) in enumerate(dense, 1):
        scores[name] += DENSE_WEIGHT / (RRF_K + rank)
    best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[: max(1, min(limit, MAX_RESULTS))]
    return [Hit(name, score) for name, score in best]


class HybridIndex(ToolIndex):
    """BM25 at once; BM25 and meanings fused once the tools' vectors are built (`ready` is set then, or when
    there will be none). `embedder` is asked for in the building thread: loading the model takes 0.4 s."""

    def __init__(
        self,
        tools: Iterable[Tool],
        paths: Mapping[str, Sequence[str]] | None = None,
        *,
        embedder: Callable[[], Embedder | None] = shared_embedder,
        cache: VectorCache | None = None,
        builds: Builds = BUILDS,
    ) -> None:
        super().__init__(tools, paths)
        self.dense: DenseIndex | None = None
        self.ready = threading.Event()
        self._failed = False
        texts = [tool_text(tool) for tool in self.tools.values()]
        builds.submit(partial(_build, weakref.ref(self), embedder, cache, list(self.tools), texts))

    @property
    def semantic(self) -> bool:
        """Whether searches embed the query (then they take milliseconds of CPU, not microseconds)."""
        return self.dense is not None

    def search(self, query: str, limit: int = 5, allowed: Iterable[str] | None = None) -> list[Hit]:
        dense = self.dense
        if dense is None:
            return super().search(query, limit, allowed)
        wanted = set(allowed) if allowed is not None else None
        lexical = super().search(query, DEPTH, wanted)
        try:
            meant = dense.rank(query, DEPTH, wanted)
        except Exception:
            if not self._failed:
                self._failed = True
                log.exception("tool search: embedding a query failed; answering from words alone")
            return lexical[: max(1, min(limit, MAX_RESULTS))]
        asked = words(query)[:MAX_QUERY_WORDS]
        coverage = sum(word in self._idf for word in asked) / len(asked) if asked else 0.0
        return fuse(lexical, meant, coverage, limit)


def _build(
    target: weakref.ref[HybridIndex],
    embedder: Callable[[], Embedder | None],
    cache: VectorCache | None,
    names: list[str],
    texts: list[str],
) -> None:
    """In the building thread; holds the index only weakly, so that a replaced exposition's is let go."""
    try:
        model = embedder()
        if model is None or not texts:
            return
        from apimcp.toolsearch.dense import build_dense  # noqa: PLC0415 - numpy: only with the search extra
        from apimcp.toolsearch.vector_cache import SHARED  # noqa: PLC0415

        dense = build_dense(model, cache if cache is not None else SHARED, names, texts, lambda: target() is not None)
        index = target()
        if index is not None and dense is not None:
            index.dense = dense
    finally:
        index = target()
        if index is not None:
            index.ready.set()


def build_index(tools: Iterable[Tool], paths: Mapping[str, Sequence[str]] | None = None) -> ToolIndex:
    """The hybrid index with the `search` extra installed; else the lexical one, which is what is lost."""
    return HybridIndex(tools, paths) if available() else ToolIndex(tools, paths)
