"""CEL contexts that hold a caller's facts, kept for its next calls.

Converting values for CEL is most of what a decision costs (about a microsecond per value), and a caller's facts
(its token's claims above all) are the same on every call it makes: they are converted once, into a context that
each call completes with the tool's facts and its arguments. Calls are decided one at a time on the event loop,
so a context is never used by two at once. A bounded number are kept, the least recently used dropped first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final

import cel

from apimcp.policies.decisions import CallFacts
from apimcp.policies.facts import caller_facts, claims_of
from apimcp.protocol.caller import Caller

MAX_CALLERS: Final = 256

Key = tuple[Caller | None, int, str | None, str]


def key_of(caller: Caller | None, client: str | None, revision: str) -> Key:
    """Whose facts: Callers compare without their claims, so the claims' identity is part of the key (the key
    holds the Caller, hence its claims: the identity cannot be reused while the key is kept)."""
    return (caller, id(caller.claims) if caller is not None else 0, client, revision)


class CallerContexts:
    __slots__ = ("_claims", "_kept", "_most")

    def __init__(self, claims: frozenset[str] | None = None, most: int = MAX_CALLERS) -> None:
        """`claims`: the claims the rules read (None: all), the only ones converted."""
        self._kept: OrderedDict[Key, cel.Context] = OrderedDict()
        self._claims = claims
        self._most = most

    def claims(self, caller: Caller | None) -> Mapping[str, Any]:
        claims, read = claims_of(caller), self._claims
        return claims if read is None else {key: value for key, value in claims.items() if key in read}

    def of(self, call: CallFacts) -> cel.Context:
        """A context holding `caller` and `claims` for the call's caller, client address and revision; raises what
        CEL's conversion raises."""
        key = key_of(call.caller, call.client, call.revision)
        kept = self._kept
        context = kept.get(key)
        if context is not None:
            kept.move_to_end(key)
            return context
        context = cel.Context(
            {"caller": caller_facts(call.caller, call.client, call.revision), "claims": self.claims(call.caller)}
        )
        kept[key] = context
        if len(kept) > self._most:
            kept.popitem(last=False)
        return context
