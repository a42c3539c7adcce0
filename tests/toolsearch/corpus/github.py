"""GitHub's hand-written queries (tests/toolsearch/github_queries.py) as a corpus of their own, reported beside
the others. All of it counts as tuning: the lexical ranking was adjusted while looking at these."""

from __future__ import annotations

from tests.toolsearch.corpus.task import ApiCorpus, Task
from tests.toolsearch.github_queries import QUERIES

GITHUB = ApiCorpus(
    "GitHub",
    "@octokit/openapi",
    "@octokit/openapi/generated/api.github.com.json",
    tuple(Task(query, expected, held_out=False) for query, expected in QUERIES),
)
