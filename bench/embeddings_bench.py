"""Tool search by meaning (the `search` extra) on GitHub's description: what the model costs to load, to embed
a query and GitHub's 1,223 tools, in memory, and what it changes to recall@1/@5 against BM25 alone, on
GitHub's 66 hand-written tasks and on the requests in other words of tests/toolsearch/meaning_queries.py
(those tuned on and those held out, apart).

    python -m bench.embeddings_bench [--spec PATH]

Everything runs in process, as the gateway runs it; memory is this process's resident set (Linux).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Collection, Sequence
from pathlib import Path

from tests.toolsearch import meaning_queries
from tests.toolsearch.github_queries import QUERIES

from apimcp.importers.openapi import import_openapi
from apimcp.protocol.models import Tool
from apimcp.toolsearch.embedding import available, shared_embedder
from apimcp.toolsearch.hybrid import HybridIndex
from apimcp.toolsearch.index import ToolIndex
from apimcp.toolsearch.vector_cache import VectorCache

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "tools" / "node" / "node_modules" / "@octokit" / "openapi" / "generated" / "api.github.com.json"


def rss_mb(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return 0.0


def recall(index: ToolIndex, queries: Sequence[tuple[str, Collection[str]]], at: int) -> float:
    return sum(bool(set(wanted) & {hit.name for hit in index.search(query, at)}) for query, wanted in queries) / len(
        queries
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec", type=Path, default=SPEC)
    args = parser.parse_args()
    if not available():
        raise SystemExit("the search extra is not installed: pip install -e '.[search]'")
    service = import_openapi(str(args.spec))
    tools = [
        Tool(name=o.tool_name, title=o.title, description=o.description, input_schema=o.input_schema)
        for o in service.operations
    ]
    paths = {o.tool_name: [f"{o.binding.method} {o.binding.path}"] for o in service.operations}  # type: ignore[union-attr]
    before = rss_mb()
    started = time.perf_counter()
    model = shared_embedder()
    assert model is not None
    loaded_in = time.perf_counter() - started
    loaded = rss_mb()
    print(f"model load {loaded_in:.2f} s; RSS {before:.0f} MB -> {loaded:.0f} MB")
    queries = [query for query, _ in QUERIES] + [query for query, _ in meaning_queries.QUERIES]
    model.embed(["warm up"])
    timings = []
    for query in (queries * 2)[:100]:
        begun = time.perf_counter()
        model.embed([query])
        timings.append(time.perf_counter() - begun)
    print(f"query embedding: p50 {statistics.median(timings) * 1000:.2f} ms over 100 short queries")
    cache = VectorCache()
    started = time.perf_counter()
    index = HybridIndex(tools, paths, cache=cache)
    assert index.ready.wait(900)
    assert index.dense is not None
    built = time.perf_counter() - started
    print(
        f"GitHub, {len(tools)} tools: vectors built in {built:.1f} s; RSS {rss_mb():.0f} MB (peak "
        f"{rss_mb('VmHWM'):.0f}); the index's vectors {index.dense.nbytes / 2**20:.2f} MiB, the cache's "
        f"{cache.bytes / 2**20:.2f} MiB"
    )
    started = time.perf_counter()
    again = HybridIndex(tools, paths, cache=cache)
    again.ready.wait(900)
    print(f"the same tools again (all cached): {time.perf_counter() - started:.2f} s")
    timings = []
    for query, _ in QUERIES * 3:
        begun = time.perf_counter()
        index.search(query, 5)
        timings.append(time.perf_counter() - begun)
    print(f"hybrid search: p50 {statistics.median(timings) * 1000:.2f} ms, p99 "
          f"{statistics.quantiles(timings, n=100)[98] * 1000:.2f} ms")  # fmt: skip
    small = meaning_queries.tools()
    small_hybrid = HybridIndex(small, cache=cache)
    small_hybrid.ready.wait(900)
    rows: list[tuple[str, ToolIndex, ToolIndex, Sequence[tuple[str, Collection[str]]]]] = [
        ("GitHub tasks", ToolIndex(tools, paths), index, QUERIES),
        ("other words", ToolIndex(small), small_hybrid, [(q, {w}) for q, w in meaning_queries.QUERIES]),
        ("other words, held out", ToolIndex(small), small_hybrid, [(q, {w}) for q, w in meaning_queries.HELD_OUT]),
    ]
    print("| queries | n | BM25 r@1 | BM25 r@5 | hybrid r@1 | hybrid r@5 |\n|---|---|---|---|---|---|")
    for name, lexical, hybrid, asked in rows:
        print(f"| {name} | {len(asked)} | {recall(lexical, asked, 1):.3f} | {recall(lexical, asked, 5):.3f} | "
              f"{recall(hybrid, asked, 1):.3f} | {recall(hybrid, asked, 5):.3f} |")  # fmt: skip


if __name__ == "__main__":
    main()
