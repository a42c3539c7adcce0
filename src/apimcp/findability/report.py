"""A discovery report on a list of tools: every tool's queries searched as `search_tools` searches them, scored,
with the confused pairs and what each listing mode costs.

It builds the index an exposition would (`toolsearch.discovery`: by words, and by meaning with the `search`
extra, once its vectors are ready), so a report says how that exposition's search fares, and takes seconds to
minutes for a large API (GitHub's 1,223 tools: about 5,000 queries): run it off any event loop.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from apimcp.findability.costs import answer_text, costs
from apimcp.findability.probes import KINDS, probes
from apimcp.findability.scores import DEPTH, Searched, by_kind, confusions, figures, hardest
from apimcp.findability.tokens import ENCODING, TokenCounter
from apimcp.protocol.models import Tool
from apimcp.toolsearch.discovery import Discovery
from apimcp.toolsearch.hybrid import HybridIndex
from apimcp.toolsearch.tools import search_result

MAX_TOOLS: Final = 5000
VECTOR_WAIT_SECONDS: Final = 600.0
BUDGET_SECONDS: Final = 900.0
"""The time searching may take: past it, the report covers the tools searched so far (`probed`), so that one
report never holds the control plane's only report slot for ever (GitHub's 1,223 tools take about a minute)."""
HITS_SAMPLE: Final = 200
"""search_tools answers measured for their size (the first queries of that many tools)."""


class ReportError(ValueError):
    """The tools cannot be reported on (too many); the message says why."""


def discovery_report(
    tools: Sequence[Tool],
    paths: Mapping[str, Sequence[str]],
    counter: TokenCounter | None = None,
    *,
    worst: int = 20,
    confused: int = 20,
    vector_wait_seconds: float = VECTOR_WAIT_SECONDS,
    budget_seconds: float = BUDGET_SECONDS,
) -> dict[str, Any]:
    """The report on `tools` (`paths`: each tool's `METHOD /path` aliases, which search ranks on); on the first of
    them only when searching them all would take longer than `budget_seconds`."""
    if len(tools) > MAX_TOOLS:
        raise ReportError(f"a discovery report covers at most {MAX_TOOLS} tools, not {len(tools)}")
    started = time.perf_counter()
    discovery = Discovery(tools, paths, {}, {})
    index = discovery.index
    if isinstance(index, HybridIndex):
        index.ready.wait(vector_wait_seconds)
    ranking = "hybrid" if isinstance(index, HybridIndex) and index.semantic else "lexical"
    searched: list[Searched] = []
    hits: list[str] = []
    probed = 0
    for tool in tools:
        probed += 1
        signature = next(iter(paths.get(tool.name, ())), None)
        for number, probe in enumerate(probes(tool, index.rarity, signature)):
            found = [hit.name for hit in index.search(probe.text, DEPTH)]
            rank = found.index(tool.name) + 1 if tool.name in found else None
            searched.append(Searched(tool.name, probe.kind, probe.text, rank, found[0] if found else None))
            if number == 0 and len(hits) < HITS_SAMPLE:
                hits.append(answer_text(search_result(index, {"query": probe.text}, None)))
        if time.perf_counter() - started > budget_seconds:
            break
    return {
        "tools": len(tools),
        "probed": probed,
        "ranking": ranking,
        "tokens": ENCODING if counter is not None else None,
        "overall": figures(searched),
        "by_kind": by_kind(searched, KINDS),
        "hardest": hardest(searched, worst),
        "confused": confusions(searched, confused),
        "context": costs(tools, discovery.page, hits, counter),
        "seconds": round(time.perf_counter() - started, 1),
    }
