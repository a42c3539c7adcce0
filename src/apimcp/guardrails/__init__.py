"""Guardrails: scanners on a call's arguments and answer, each with an action (report, redact, block): secrets,
personal data, instructions aimed at the model; and the hook interface companies add their own with
(docs/governance.md).

- `hooks.py`: the interface (before call, after call) and what it takes and gives.
- `detectors.py`: what the built-in scanners look for.
- `scanning.py`: the built-in scanners as guardrails.
- `registry.py`: a plan's guardrails, checked and made (built in, or installed entry points).
- `chain.py`: a plan's guardrails run in order around a call.
"""
