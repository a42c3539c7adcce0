"""Ranking tools for a query: BM25 over each tool's words, its name and path counting more than its prose.

Built once per exposition (per snapshot); a search reads the postings of the query's words only, so it costs
microseconds even for GitHub's 1,223 tools. Bounded: a query's first 32 words, at most 50 results.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from apimcp.protocol.models import Tool
from apimcp.toolsearch.words import words

K1 = 1.2
B = 0.75
NAME_WEIGHT, PATH_WEIGHT, TITLE_WEIGHT, PARAM_WEIGHT = 3, 2, 2, 1
DESCRIPTION_WORDS = 80
"""Words of a description that count: the first sentences say what a tool does; the rest, how."""
NAME_COVERAGE = 1.0
"""A tool whose name the query says in full ranks up to twice as high: `repos_get` for "get a repository"
rather than a longer name that shares a word or two."""
MAX_QUERY_WORDS = 32
MAX_RESULTS = 50


@dataclass(frozen=True, slots=True)
class Hit:
    name: str
    score: float


def tool_words(tool: Tool, paths: Sequence[str] = ()) -> Counter[str]:
    counted: Counter[str] = Counter()
    for weight, text in (
        (NAME_WEIGHT, tool.name),
        (TITLE_WEIGHT, tool.title or ""),
        *((PATH_WEIGHT, path) for path in paths),
    ):
        for word in words(text):
            counted[word] += weight
    for word in words(tool.description or "")[:DESCRIPTION_WORDS]:
        counted[word] += 1
    properties = tool.input_schema.get("properties")
    if isinstance(properties, Mapping):
        for name in properties:
            for word in words(str(name)):
                counted[word] += PARAM_WEIGHT
    return counted


class ToolIndex:
    """BM25 over tools; `paths` (e.g. `GET /repos/{owner}/{repo}`) are extra words per tool name."""

    def __init__(self, tools: Iterable[Tool], paths: Mapping[str, Sequence[str]] | None = None) -> None:
        paths = paths or {}
        self.tools: dict[str, Tool] = {}
        self._postings: dict[str, list[tuple[str, int]]] = defaultdict(list)
        self._lengths: dict[str, int] = {}
        self._names: dict[str, frozenset[str]] = {}
        for tool in tools:
            counted = tool_words(tool, paths.get(tool.name, ()))
            self.tools[tool.name] = tool
            self._names[tool.name] = frozenset(words(tool.name))
            self._lengths[tool.name] = sum(counted.values())
            for word, count in counted.items():
                self._postings[word].append((tool.name, count))
        total = len(self._lengths)
        self._average = (sum(self._lengths.values()) / total) if total else 1.0
        self._idf = {
            word: math.log(1 + (total - len(posting) + 0.5) / (len(posting) + 0.5))
            for word, posting in self._postings.items()
        }

    def __len__(self) -> int:
        return len(self.tools)

    def rarity(self, word: str) -> float:
        """How rare `word` is among the tools (its inverse document frequency; 0 for a word no tool has)."""
        found = words(word)
        return self._idf.get(found[0], 0.0) if found else 0.0

    def search(self, query: str, limit: int = 5, allowed: Iterable[str] | None = None) -> list[Hit]:
        """The best `limit` tools for `query` (those in `allowed` only, when given), best first."""
        wanted = set(allowed) if allowed is not None else None
        scores: dict[str, float] = defaultdict(float)
        asked = dict.fromkeys(words(query)[:MAX_QUERY_WORDS])
        for word in asked:
            idf = self._idf.get(word)
            if idf is None:
                continue
            for name, count in self._postings[word]:
                if wanted is not None and name not in wanted:
                    continue
                norm = count + K1 * (1 - B + B * self._lengths[name] / self._average)
                scores[name] += idf * count * (K1 + 1) / norm
        for name in scores:
            named = self._names[name]
            if named:
                scores[name] *= 1 + NAME_COVERAGE * len(named.intersection(asked)) / len(named)
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[: max(1, min(limit, MAX_RESULTS))]
        return [Hit(name, score) for name, score in best]
