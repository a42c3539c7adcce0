"""One evaluation task: what a person asks an agent, the tools that would do it, and whether it is held out.

Held-out tasks are kept apart from tuning: ranking is never adjusted by looking at them, and every figure is
reported for the two parts separately, so the held-out figure stays an honest estimate of unseen wording.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

NODE_MODULES = Path(__file__).resolve().parents[3] / "tools" / "node" / "node_modules"


@dataclass(frozen=True, slots=True)
class Task:
    query: str
    expected: frozenset[str]
    """Tool names (as apimcp derives them from the description) any of which does the task."""
    held_out: bool


@dataclass(frozen=True, slots=True)
class ApiCorpus:
    name: str
    package: str
    """The npm package (pinned in tools/node/package.json) that ships the description."""
    spec: str
    """The description's path under tools/node/node_modules."""
    tasks: tuple[Task, ...]
    server: str | None = None
    """Replaces the description's own server URL where apimcp cannot use it (as its user would have to)."""

    @property
    def path(self) -> Path:
        return NODE_MODULES / self.spec

    def part(self, held_out: bool) -> tuple[Task, ...]:
        return tuple(task for task in self.tasks if task.held_out == held_out)


def tasks(tuning: Iterable[tuple[str, str]], held_out: Iterable[tuple[str, str]]) -> tuple[Task, ...]:
    """Tasks from (query, space-separated tool names) pairs, the held-out ones in a list of their own."""
    return tuple(
        Task(query, frozenset(names.split()), hidden)
        for hidden, pairs in ((False, tuning), (True, held_out))
        for query, names in pairs
    )
