"""Values sealed at rest with AES-256-GCM, each bound to its place (owner and key) by the associated data, so a
sealed value copied under another user's key does not open. The key is the gateway's state key (shared by
replicas that share a store) or, by default, one drawn for this process."""

from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

NONCE_BYTES = 12


class ValueSealer:
    def __init__(self, key: bytes | None = None) -> None:
        if key is not None and len(key) != 32:
            raise ValueError("a state key is 32 bytes (AES-256)")
        self._aead = AESGCM(key if key is not None else AESGCM.generate_key(bit_length=256))

    def seal(self, place: str, plain: bytes) -> bytes:
        nonce = os.urandom(NONCE_BYTES)
        return nonce + self._aead.encrypt(nonce, plain, place.encode())

    def open(self, place: str, sealed: bytes) -> bytes | None:
        """The plain value, or None when it was altered, moved or sealed under another key."""
        try:
            return self._aead.decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], place.encode())
        except (InvalidTag, ValueError):
            return None
