"""Safety nets for work done on someone's behalf: which addresses a fetch may reach and how it is bounded,
how much a YAML document may expand, secret masking, large JSON parsed without stalling the collector.

Imports nothing else from apimcp, so every layer may use it.
"""
