"""`apimcp stdio URL`: a desktop MCP client that speaks only stdio reaches a Streamable HTTP endpoint.

`wire.py` says which HTTP headers a message needs (the era's, from the message itself); `sse.py` reads a
response's event stream; `bridge.py` carries messages between the two sides.
"""
