"""Speaking MCP to a server as its client: the stdio bridge and upstream MCP servers (federation) share it.

`headers.py`: the HTTP headers a message needs in either era; `sse.py`: a response's server-sent events as
JSON messages, bounded; `requests.py`: request bodies, with the 2026-07-28 `_meta` envelope where the era
wants it; `answers.py`: a whole response body (JSON or an SSE stream) read to the result of one request.
"""
