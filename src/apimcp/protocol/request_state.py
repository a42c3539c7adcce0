"""Integrity-protected `requestState` for 2026-07-28 multi round-trip requests.

The client echoes requestState verbatim, so it is attacker-controlled. apimcp
seals it with HMAC-SHA256 under a key every replica shares; any replica can
then continue a round trip another one started. A sealed state is bound to the
method, the target (tool/prompt name or resource URI), a digest of the
original arguments and an expiry, and is refused when any of those differ.
A sealed state opens once: sent again, the round it carried would run again
(a call a person approved once, made as many times as the client likes), so
each opening is recorded (`UsedStates`, shared by replicas like the key) until
the state expires.

Format: ``v1.<base64url payload>.<base64url tag>``. Several keys may be
configured for rotation: the first seals, all of them verify.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from apimcp.protocol.errors import INVALID_PARAMS, McpError

_PREFIX = "v1."
DEFAULT_TTL_SECONDS = 600.0
MIN_KEY_BYTES = 16


class InvalidRequestState(McpError):
    """A requestState that was tampered with, expired, or belongs to another request."""

    def __init__(self, reason: str) -> None:
        super().__init__(INVALID_PARAMS, f"Invalid requestState: {reason}", {"field": "requestState"})


@dataclass(frozen=True, slots=True)
class RoundState:
    """What one round of a multi round-trip request carries into the next."""

    answers: Mapping[str, Any]
    """Input responses gathered in earlier rounds, by input-request key."""
    handler_state: Mapping[str, Any]
    """Whatever the handler chose to remember between rounds."""
    nonce: str = ""
    """What tells this sealed state from any other (`UsedStates`)."""
    expires_at: float = 0.0


class UsedStates(Protocol):
    """The sealed states opened already (every replica's, when shared)."""

    async def first_use(self, nonce: str, expires_at: float) -> bool:
        """Record `nonce` as used until `expires_at`; False when it was already."""
        ...


MAX_REMEMBERED = 200_000


class MemoryUsedStates:
    """This process's record of opened states: each until it expires, at most `MAX_REMEMBERED` (past that the
    oldest goes first: a state that old is within a few minutes of expiring anyway)."""

    def __init__(self, most: int = MAX_REMEMBERED) -> None:
        self._until: OrderedDict[str, float] = OrderedDict()
        self._most = most

    async def first_use(self, nonce: str, expires_at: float) -> bool:
        now = time.time()
        while self._until and next(iter(self._until.values())) < now:
            self._until.popitem(last=False)
        if nonce in self._until:
            return False
        self._until[nonce] = expires_at
        if len(self._until) > self._most:
            self._until.popitem(last=False)
        return True


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def request_digest(method: str, target: str | None, arguments: Any, endpoint: str = "") -> str:
    """A short digest of what the request asks for, and of which endpoint, so a state cannot be replayed
    elsewhere."""
    canonical = orjson.dumps([method, target, arguments, endpoint], option=orjson.OPT_SORT_KEYS)
    return _b64(hashlib.sha256(canonical).digest()[:18])


class RequestStateSealer:
    """Seals and opens requestState values under a shared key set."""

    def __init__(
        self, keys: Sequence[bytes] | None = None, ttl_seconds: float = DEFAULT_TTL_SECONDS,
        used: UsedStates | None = None,
    ) -> None:  # fmt: skip
        if keys is not None and not keys:
            raise ValueError("at least one requestState key is needed")
        if keys is not None and any(len(k) < MIN_KEY_BYTES for k in keys):
            raise ValueError(f"requestState keys must be at least {MIN_KEY_BYTES} bytes long")
        # Without configured keys, a random per-process key: correct for one replica only.
        self._keys = list(keys) if keys is not None else [secrets.token_bytes(32)]
        self._ttl = ttl_seconds
        self.used: UsedStates = used if used is not None else MemoryUsedStates()

    def seal(self, digest: str, state: RoundState, principal: str | None = None) -> str:
        payload = {
            "d": digest,
            "a": dict(state.answers),
            "s": dict(state.handler_state),
            "x": int(time.time() + self._ttl),
            "n": secrets.token_hex(12),  # what `UsedStates` remembers: never the same twice by chance
        }
        if principal is not None:
            payload["p"] = principal
        body = _PREFIX + _b64(orjson.dumps(payload))
        tag = hmac.new(self._keys[0], body.encode("ascii"), hashlib.sha256).digest()
        return body + "." + _b64(tag)

    def open(self, sealed: object, digest: str, principal: str | None = None) -> RoundState:
        if not isinstance(sealed, str):
            raise InvalidRequestState("it must be a string")
        body, dot, tag_text = sealed.rpartition(".")
        if not dot or not body.startswith(_PREFIX):
            raise InvalidRequestState("unrecognised format")
        try:
            tag = _unb64(tag_text)
        except ValueError as exc:
            raise InvalidRequestState("unrecognised format") from exc
        signed = body.encode("ascii", "replace")
        if not any(hmac.compare_digest(hmac.new(key, signed, hashlib.sha256).digest(), tag) for key in self._keys):
            raise InvalidRequestState("integrity check failed")
        payload = orjson.loads(_unb64(body[len(_PREFIX) :]))
        if payload.get("x", 0) < time.time():
            raise InvalidRequestState("it has expired; send the request again without it")
        if payload.get("d") != digest:
            raise InvalidRequestState("it was issued for a different request")
        if payload.get("p") != principal:
            raise InvalidRequestState("it was issued to a different user")
        return RoundState(payload.get("a", {}), payload.get("s", {}), str(payload.get("n", "")), float(payload["x"]))

    async def open_once(self, sealed: object, digest: str, principal: str | None = None) -> RoundState:
        """`open`, refusing a state opened before (its round would run again)."""
        state = self.open(sealed, digest, principal)
        if not await self.used.first_use(state.nonce, state.expires_at):
            raise InvalidRequestState("it was sent already; send the request again without it")
        return state
