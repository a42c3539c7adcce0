"""MCP servers as services: an upstream server's tools imported into the catalog and called through a gateway.

`definitions.py`: an upstream's tool definitions checked and turned into catalog operations, each with the
digest of its definition; `listing.py`: reading them from the server at import time (either era, every page,
bounded, through the fetch policy); `sessions.py`: the gateway's connections to an upstream (the era it speaks,
its sessions per credential, opened again when they expire); `backend.py`: the `Backend` that calls an upstream
tool; `results.py`: an upstream's tool result, checked, as the neutral `ToolAnswer`.
"""
