"""The one error of tool search's tools: arguments that are not what their schemas say."""

from __future__ import annotations


class ToolSearchError(ValueError):
    """Arguments of search_tools, describe_tools or call_tool that are not what their schemas say; the
    exposition answers it as a tool error (`isError`), which the model reads and can correct."""
