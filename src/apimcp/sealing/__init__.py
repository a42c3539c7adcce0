"""Secrets sealed for gateways: key pairs whose private half only gateways hold, and snapshots sealed to them.

Imports nothing else from apimcp, so that the control plane (which seals), the
gateway (which opens) and the CLI (which makes key pairs) share it.
"""
