"""Tool search for huge APIs: an exposition offers three tools (find tools, describe them, call one) instead
of listing every tool. `words.py` turns text into comparable words; `index.py` ranks tools for a query;
`compact.py` shapes a hit, `facets.py` narrows a search (service, tag, read-only), `describe.py` gives full
definitions; `tools.py` is the three tools as MCP serves them. With the `search` extra, `hybrid.py` ranks by
meaning too: `embedding.py` and `minilm.py` (the model), `vector_cache.py`, `dense.py` and `builds.py` (tools'
vectors, built off the event loop)."""
