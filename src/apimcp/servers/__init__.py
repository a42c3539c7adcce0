"""The HTTP servers apimcp runs (gateway, control plane, `apimcp serve`), under uvicorn, one concept per module.

`factory.server_for` builds every one of them; `lifecycle` starts and stops it gracefully; `head_limits` bounds
request heads below the application; `tls` is the certificate a listener presents; `workers` shares one port
between forked processes (`--workers N`); `event_loop` picks the loop a server runs on.
"""
