"""A lean HTTP/1.1 client for plain-HTTP backends: the REST call path's fast lane.

aiohttp's client cost a gateway about as much CPU per call as all of apimcp's own code (bench/README.md, the
fast path). This client does only what a REST call needs: kept-alive connections per origin, a request head
written in one piece, the answer parsed by httptools (as uvicorn parses requests), its body bounded and
decompressed. `RestBackend` uses it for `http://` backends; TLS, multipart bodies, HEAD requests and the hops
of a redirect stay with aiohttp.

- `errors.py`: what can go wrong, as the call path tells it (not connected: nothing sent; dropped; unsendable)
- `wire.py`: the request head, checked as aiohttp checks it
- `answer.py`: an answer, its body decoded within a bound
- `connection.py`: one connection, one exchange at a time
- `client.py`: connections kept per origin, names resolved by the session's resolver
"""
