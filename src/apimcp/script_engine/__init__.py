"""What a script process runs: the QuickJS engine, its prelude, and the loop that serves the gateway.

Scripted custom tools are evaluated in child processes (`child`), which the gateway can kill when a
script outlives its deadline, even inside a built-in that never checks the engine's interrupt. The
child imports this package, `apimcp.shaping.frames` and the quickjs binding only: nothing of the
gateway, so it starts quickly and holds none of the gateway's state.
"""
