"""How well a retrieval strategy ranks an API's tools for the corpus's tasks: recall@1, recall@5 and MRR.

A strategy is a small seam: given an API's tools it builds a ranker, a function from a query to tool names,
best first. Lexical is the gateway's BM25 index; hybrid its `HybridIndex` as an exposition builds it, once
the tools' vectors are ready; semantic that index's dense side alone (cosine similarity of meanings). The two
last need the `search` extra; both use the production code as it is, nothing tuned here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from apimcp.importers.openapi import import_openapi
from apimcp.protocol.models import Tool
from apimcp.toolsearch.hybrid import HybridIndex, build_index
from apimcp.toolsearch.index import ToolIndex
from tests.toolsearch.corpus.task import Task

Ranker = Callable[[str, int], Sequence[str]]
"""(query, limit) -> at most `limit` tool names, best first."""
MRR_DEPTH = 10
"""Reciprocal rank counts a right tool found in the first 10; deeper than that, an agent would not look."""


@dataclass(frozen=True, slots=True)
class Catalog:
    """An API's tools as the gateway lists them, with each tool's `METHOD /path` (words the index reads)."""

    tools: tuple[Tool, ...]
    paths: Mapping[str, Sequence[str]]

    @property
    def names(self) -> frozenset[str]:
        return frozenset(tool.name for tool in self.tools)


Strategy = Callable[[Catalog], Ranker]


def load_catalog(spec: Path, server: str | None = None) -> Catalog:
    """The description's tools, imported as the gateway imports it (seconds for a large one: import once);
    `server` replaces the description's top-level server URL."""
    document = None
    if server is not None:
        document = {**orjson.loads(spec.read_bytes()), "servers": [{"url": server}]}
    service = import_openapi(str(spec), document=document)
    tools = tuple(
        Tool(
            name=o.tool_name,
            title=o.title,
            description=o.description,
            input_schema=o.input_schema,
            output_schema=o.output_schema,
        )
        for o in service.operations
    )
    paths = {o.tool_name: (o.signature,) for o in service.operations}  # `METHOD /path`, as the gateway indexes it
    return Catalog(tools, paths)


def lexical(catalog: Catalog) -> Ranker:
    index = ToolIndex(catalog.tools, catalog.paths)

    def rank(query: str, limit: int) -> list[str]:
        return [hit.name for hit in index.search(query, limit)]

    return rank


VECTORS_TIMEOUT = 1800.0
"""Seconds to wait for an index's vectors: embedding GitHub's 1,223 tools takes about a minute of one core."""


def ready_hybrid(catalog: Catalog) -> HybridIndex:
    """The index `build_index` gives an exposition, once its vectors are built (the gateway answers lexically
    until then); fails without the `search` extra rather than measuring BM25 under another name."""
    index = build_index(catalog.tools, catalog.paths)
    if not isinstance(index, HybridIndex):
        raise RuntimeError("semantic and hybrid search need the `search` extra")
    if not index.ready.wait(VECTORS_TIMEOUT) or not index.semantic:
        raise RuntimeError("the tools' vectors were not built (see the log)")
    return index


def hybrid(catalog: Catalog) -> Ranker:
    index = ready_hybrid(catalog)

    def rank(query: str, limit: int) -> list[str]:
        return [hit.name for hit in index.search(query, limit)]

    return rank


def semantic(catalog: Catalog) -> Ranker:
    dense = ready_hybrid(catalog).dense
    assert dense is not None  # ready_hybrid checked it

    def rank(query: str, limit: int) -> list[str]:
        return [name for name, _ in dense.rank(query, limit)]

    return rank


STRATEGIES: dict[str, Strategy] = {"lexical": lexical, "semantic": semantic, "hybrid": hybrid}


@dataclass(frozen=True, slots=True)
class Miss:
    query: str
    expected: tuple[str, ...]
    found: tuple[str, ...]
    """The first five the strategy gave."""


@dataclass(frozen=True, slots=True)
class Scores:
    tasks: int
    recall_at_1: float
    recall_at_5: float
    mrr: float
    misses: tuple[Miss, ...]
    """Tasks with no right tool in the top 5."""


def rank_of(found: Sequence[str], expected: Iterable[str]) -> int | None:
    """1-based rank of the first right tool in `found`, None when there is none."""
    wanted = set(expected)
    return next((place for place, name in enumerate(found, 1) if name in wanted), None)


def score(rank: Ranker, tasks: Sequence[Task]) -> Scores:
    if not tasks:
        return Scores(0, 0.0, 0.0, 0.0, ())
    top1 = top5 = 0
    reciprocal = 0.0
    misses = []
    for task in tasks:
        found = tuple(rank(task.query, MRR_DEPTH))
        place = rank_of(found, task.expected)
        top1 += place == 1
        top5 += place is not None and place <= 5
        reciprocal += 1 / place if place is not None else 0.0
        if place is None or place > 5:
            misses.append(Miss(task.query, tuple(sorted(task.expected)), found[:5]))
    count = len(tasks)
    return Scores(count, top1 / count, top5 / count, reciprocal / count, tuple(misses))


def pooled(parts: Sequence[Scores]) -> Scores:
    """Scores over several APIs' tasks together, each task counting once."""
    count = sum(part.tasks for part in parts)
    if not count:
        return Scores(0, 0.0, 0.0, 0.0, ())

    def mean(value: Callable[[Scores], float]) -> float:
        return sum(value(part) * part.tasks for part in parts) / count

    misses = tuple(miss for part in parts for miss in part.misses)
    return Scores(count, mean(lambda s: s.recall_at_1), mean(lambda s: s.recall_at_5), mean(lambda s: s.mrr), misses)
