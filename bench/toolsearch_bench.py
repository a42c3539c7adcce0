"""Tool search on GitHub's description: what tools/list weighs with and without it, how long a search takes,
and how often the right tool is in the top 5 of the hand-written query set (tests/toolsearch). Recall@1/@5 and
MRR on the evaluation corpus of four more APIs, tuning and held-out tasks apart: bench/toolsearch_quality.py.

    python -m bench.toolsearch_bench [--spec PATH] [--rounds 200]

The index and searches run in process, as the gateway runs them (one index per exposition, built when a
snapshot is applied); latency is the median over every query, `--rounds` times each.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import orjson
from tests.toolsearch.corpus.quality import load_catalog
from tests.toolsearch.github_queries import QUERIES

from apimcp.protocol import dialects
from apimcp.protocol.models import Page
from apimcp.protocol.versions import V2026_07_28
from apimcp.toolsearch.index import ToolIndex
from apimcp.toolsearch.tools import SEARCH_PAGE

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "tools" / "node" / "node_modules" / "@octokit" / "openapi" / "generated" / "api.github.com.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec", type=Path, default=SPEC)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    catalog = load_catalog(args.spec)
    tools, paths = list(catalog.tools), catalog.paths
    started = time.perf_counter()
    index = ToolIndex(tools, paths)
    built = time.perf_counter() - started
    full = len(orjson.dumps(dialects.tools_page(Page(items=tools), V2026_07_28)))
    small = len(orjson.dumps(dialects.tools_page(SEARCH_PAGE, V2026_07_28)))
    timings = []
    hits = 0
    for _ in range(args.rounds):
        for query, wanted in QUERIES:
            begun = time.perf_counter()
            found = index.search(query, 5)
            timings.append(time.perf_counter() - begun)
            hits += bool(wanted & {hit.name for hit in found})
    recall = hits / (len(QUERIES) * args.rounds)
    p50 = statistics.median(timings) * 1000
    p99 = statistics.quantiles(timings, n=100)[98] * 1000
    print(f"GitHub: {len(tools)} tools, index built in {built * 1000:.0f} ms")
    print(f"tools/list (2026-07-28): {full:,} bytes -> {small:,} bytes with tool search ({full / small:,.0f}x smaller)")
    print(f"search latency: p50 {p50:.2f} ms, p99 {p99:.2f} ms (goal p50 < 5 ms)")
    print(f"recall@5 on {len(QUERIES)} queries: {recall:.3f} (goal >= 0.9)")


if __name__ == "__main__":
    main()
