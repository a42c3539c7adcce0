"""MCP servers as services: an upstream server's tools, prompts and resources imported into the catalog and served
through a gateway (docs/federation.md).

`definitions.py`: what an upstream lists, checked, bounded and pinned by digest; `era.py`: which era it speaks;
`listing.py`: reading it at import (every page, through the fetch policy); `sessions.py`: the gateway's sessions
with it, per credential; `listener.py`: a session's GET stream; `sse_channel.py`: the 2024-11-05 HTTP+SSE
transport; `backend.py`: the `Backend` calling it; `client_input.py`: what it asks the client, relayed;
`results.py` and `offerings.py`: its answers read into the engine's models; `health.py`: whether it answers.
"""
