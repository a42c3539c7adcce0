"""Policies: rules in CEL over the caller, the tool, the arguments and the time, which allow or deny each call,
hide the tools a caller may not call from its listings, and redact fields of answers (docs/governance.md).

- `rules.py`: a rule as written, checked and compiled where it is written.
- `facts.py`: the variables a condition sees.
- `policy_set.py`: an exposition's rules compiled for its tools, deciding calls and listings.
- `redaction.py`: hiding the fields `redact` rules name.
"""
