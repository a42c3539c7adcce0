"""Scoring searches: recall@1, recall@5 and MRR@10 of the queries, overall and per kind; each tool's own; the
pairs of tools search confuses (a tool's query finding another first)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

DEPTH: Final = 10
"""Ranks looked at: MRR@10, and a query whose tool is not in its first ten counts 0."""


@dataclass(frozen=True, slots=True)
class Searched:
    """One query: the tool it was made for, its kind, its text, where that tool ranked (None: not in the first
    `DEPTH`) and what ranked first."""

    tool: str
    kind: str
    query: str
    rank: int | None
    first: str | None


def figures(searched: Iterable[Searched]) -> dict[str, Any]:
    """`{queries, recall@1, recall@5, mrr}` (rounded to 3 places; zeros for no query)."""
    ranks = [entry.rank for entry in searched]
    count = len(ranks)
    if not count:
        return {"queries": 0, "recall@1": 0.0, "recall@5": 0.0, "mrr": 0.0}
    return {
        "queries": count,
        "recall@1": round(sum(1 for r in ranks if r == 1) / count, 3),
        "recall@5": round(sum(1 for r in ranks if r is not None and r <= 5) / count, 3),
        "mrr": round(sum(1 / r for r in ranks if r is not None) / count, 3),
    }


def by_kind(searched: Sequence[Searched], kinds: Sequence[str]) -> dict[str, dict[str, Any]]:
    return {kind: figures(entry for entry in searched if entry.kind == kind) for kind in kinds}


def per_tool(searched: Sequence[Searched]) -> dict[str, list[Searched]]:
    grouped: dict[str, list[Searched]] = defaultdict(list)
    for entry in searched:
        grouped[entry.tool].append(entry)
    return grouped


def hardest(searched: Sequence[Searched], limit: int) -> list[dict[str, Any]]:
    """The tools their own queries find least (lowest MRR first), with each query, its rank and what came first."""
    grouped = per_tool(searched)
    worst = sorted(grouped.items(), key=lambda item: (figures(item[1])["mrr"], item[0]))[:limit]
    return [
        {
            "tool": tool,
            **figures(entries),
            "misses": [
                {"kind": e.kind, "query": e.query, "rank": e.rank, "first": e.first} for e in entries if e.rank != 1
            ],
        }
        for tool, entries in worst
        if figures(entries)["recall@1"] < 1.0
    ]


def confusions(searched: Sequence[Searched], limit: int) -> list[dict[str, Any]]:
    """The pairs (a tool, the tool its queries found first instead) seen most, with how often and an example."""
    pairs: Counter[tuple[str, str]] = Counter()
    example: dict[tuple[str, str], str] = {}
    for entry in searched:
        if entry.first is not None and entry.first != entry.tool:
            pair = (entry.tool, entry.first)
            pairs[pair] += 1
            example.setdefault(pair, entry.query)
    return [
        {"tool": tool, "found_instead": other, "times": times, "example": example[(tool, other)]}
        for (tool, other), times in sorted(pairs.items(), key=lambda item: (-item[1], item[0]))[:limit]
    ]
