"""apimcp: expose the APIs you already have as MCP servers."""

__version__ = "0.1.0"
