"""RFC 7636: a verifier kept by the client, its S256 challenge sent with the authorization request."""

from __future__ import annotations

import base64
import hashlib
import secrets


def verifier() -> str:
    return secrets.token_urlsafe(48)  # 64 characters of the unreserved set, as RFC 7636 asks (43 to 128)


def challenge(of: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(of.encode()).digest()).rstrip(b"=").decode()
