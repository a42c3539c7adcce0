"""Tool search for huge APIs: an exposition offers two tools (find tools, call one) instead of listing every
tool. `words.py` turns text into comparable words; `index.py` ranks tools for a query; `tools.py` is the
two tools as MCP serves them."""
