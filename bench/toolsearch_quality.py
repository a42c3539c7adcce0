"""Tool-search quality on the evaluation corpus (tests/toolsearch/corpus): per API, recall@1, recall@5 and
MRR@10 of a retrieval strategy, tuning and held-out tasks apart, and the search latency.

    python -m bench.toolsearch_quality [--strategy lexical|semantic|hybrid] [--api NetBox ...] [--rounds 20] [--misses]

Each description is imported as the gateway imports it and searched in process, as an exposition with tool
search does. Latency is the median over every task's query, `--rounds` times each, at search_tools' default
limit. `--misses` lists the tuning tasks the strategy misses; held-out misses are never printed, so nobody
tunes ranking on them. For semantic and hybrid (the `search` extra), `index ms` includes embedding the tools.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

from tests.toolsearch.corpus import CORPORA
from tests.toolsearch.corpus.github import GITHUB
from tests.toolsearch.corpus.quality import STRATEGIES, Miss, Ranker, Scores, load_catalog, pooled, score
from tests.toolsearch.corpus.task import ApiCorpus, Task

from apimcp.toolsearch.tools import DEFAULT_LIMIT

PARTS = ((False, "tuning"), (True, "held-out"))


def p50_ms(rank: Ranker, tasks: Sequence[Task], rounds: int) -> float:
    timings = []
    for _ in range(rounds):
        for task in tasks:
            begun = time.perf_counter()
            rank(task.query, DEFAULT_LIMIT)
            timings.append(time.perf_counter() - begun)
    return statistics.median(timings) * 1000


def row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def figures(scores: Scores) -> list[str]:
    return [str(scores.tasks), f"{scores.recall_at_1:.3f}", f"{scores.recall_at_5:.3f}", f"{scores.mrr:.3f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--strategy", choices=sorted(STRATEGIES), default="lexical")
    parser.add_argument("--api", action="append", help="only these APIs (by name; default: all)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--misses", action="store_true", help="list the tuning tasks missed in the top 5")
    args = parser.parse_args()
    corpora: list[ApiCorpus] = [GITHUB, *CORPORA]
    if args.api:
        wanted = {name.lower() for name in args.api}
        corpora = [corpus for corpus in corpora if corpus.name.lower() in wanted]
    strategy = STRATEGIES[args.strategy]
    print(f"strategy: {args.strategy}")
    print(row(["API", "tools", "import s", "index ms", "part", "tasks", "recall@1", "recall@5", "MRR@10", "p50 ms"]))
    print(row(["---"] * 10))
    totals: dict[bool, list[Scores]] = {False: [], True: []}
    missed: list[tuple[str, Miss]] = []
    for corpus in corpora:
        started = time.perf_counter()
        catalog = load_catalog(corpus.path, corpus.server)
        imported = time.perf_counter() - started
        started = time.perf_counter()
        rank = strategy(catalog)
        built = (time.perf_counter() - started) * 1000
        unknown = sorted({name for task in corpus.tasks for name in task.expected} - catalog.names)
        if unknown:
            raise SystemExit(f"{corpus.name}: tasks name tools the description does not have: {unknown}")
        latency = p50_ms(rank, corpus.tasks, args.rounds)
        first = True
        for held_out, label in PARTS:
            part = corpus.part(held_out)
            if not part:
                continue
            scores = score(rank, part)
            if corpus is not GITHUB:
                totals[held_out].append(scores)
            if not held_out:
                missed.extend((corpus.name, miss) for miss in scores.misses)
            head = [corpus.name, len(catalog.tools), f"{imported:.1f}", f"{built:.0f}"] if first else [""] * 4
            print(row([*head, label, *figures(scores), f"{latency:.2f}" if first else ""]))
            first = False
    for held_out, label in PARTS:
        if totals[held_out]:
            print(row([f"**{len(totals[held_out])} APIs**", "", "", "", label, *figures(pooled(totals[held_out])), ""]))
    if args.misses:
        for name, miss in missed:
            print(f"{name}: {miss.query!r} wants {', '.join(miss.expected)}; top 5: {', '.join(miss.found)}")


if __name__ == "__main__":
    main()
