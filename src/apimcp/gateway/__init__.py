"""The data plane: expositions of catalog services served as MCP endpoints."""
