"""Audit trails: one structured event per MCP request, and per one refused by authentication or a rate limit,
for the plans that ask for them (beyond a few refusals alike a minute, one event counting the rest); written as
JSON log lines and sent to the control plane, which keeps the latest."""
