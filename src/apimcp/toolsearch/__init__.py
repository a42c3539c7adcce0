"""Tool search for huge APIs: an exposition offers two tools (find tools, call one) instead of listing every
tool. `words.py` turns text into comparable words; `index.py` ranks tools for a query; `tools.py` is the
two tools as MCP serves them. With the `search` extra, `hybrid.py` ranks by meaning too: `embedding.py` and
`minilm.py` (the model), `vector_cache.py`, `dense.py` and `builds.py` (tools' vectors, built off the event loop)."""
