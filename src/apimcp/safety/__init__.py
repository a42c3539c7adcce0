"""Safety nets for work done on someone's behalf: limits, address checks, guarded fetches, secret masking.

Imports nothing else from apimcp, so every layer may use it.
"""
