"""Gateway key pairs (X25519): the private half stays with gateways, the public half is registered.

The private half is a PKCS#8 PEM text, kept in a file only its owner may read (or
handed over in an environment variable). The public half travels as the raw
32-byte key in base64url (43 characters) and is known by a short fingerprint.
Key material never appears in a repr or an error message.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
from pathlib import Path
from typing import NoReturn

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from apimcp.sealing.private_files import read_private

_PUBLIC_TEXT = re.compile(r"[A-Za-z0-9_-]{43}")


class GatewayPublicKey:
    """The public half of a gateway key: what the control plane seals snapshot secrets to."""

    __slots__ = ("fingerprint", "key", "text")

    def __init__(self, key: X25519PublicKey) -> None:
        raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        self.key = key
        self.text = base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
        self.fingerprint = hashlib.sha256(raw).hexdigest()[:16]

    @classmethod
    def from_text(cls, text: str) -> GatewayPublicKey:
        """The key written as `text` (base64url of the raw 32 bytes, no padding); ValueError otherwise."""
        if not isinstance(text, str) or not _PUBLIC_TEXT.fullmatch(text):
            raise ValueError("a gateway public key is 32 bytes in base64url without padding (43 characters)")
        try:
            raw = base64.urlsafe_b64decode(text + "=")
        except binascii.Error:
            raise ValueError("a gateway public key is 32 bytes in base64url without padding (43 characters)") from None
        key = cls(X25519PublicKey.from_public_bytes(raw))
        if key.text != text:  # unused trailing bits set: one key, one spelling
            raise ValueError("the gateway public key is not in canonical base64url")
        return key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GatewayPublicKey) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"GatewayPublicKey({self.fingerprint})"


class GatewayKey:
    """A gateway's private key, and its public half."""

    __slots__ = ("_private", "public")

    def __init__(self, private: X25519PrivateKey) -> None:
        self._private = private
        self.public = GatewayPublicKey(private.public_key())

    @classmethod
    def generate(cls) -> GatewayKey:
        return cls(X25519PrivateKey.generate())

    @classmethod
    def from_pem(cls, text: str | bytes) -> GatewayKey:
        """A key from its PEM text (as `to_pem` writes it); ValueError, without echoing the text, otherwise."""
        data = text.encode("ascii", "replace") if isinstance(text, str) else bytes(text)
        try:
            private = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError):
            raise ValueError("not a gateway key: expected an unencrypted X25519 private key in PEM (PKCS#8)") from None
        if not isinstance(private, X25519PrivateKey):
            raise ValueError("not a gateway key: the PEM holds another kind of private key (X25519 expected)")
        return cls(private)

    @classmethod
    def load(cls, path: Path) -> GatewayKey:
        """The key in the file at `path`; on POSIX a file that group or others may read is refused."""
        path = Path(path)
        try:
            content = read_private(path, "gateway key file")
        except OSError as exc:
            raise ValueError(f"cannot read the gateway key file {path}: {exc.strerror}") from None
        try:
            return cls.from_pem(content)
        except ValueError as exc:
            raise ValueError(f"gateway key file {path}: {exc}") from None

    def to_pem(self) -> bytes:
        """The private key as PEM (PKCS#8, unencrypted): handle it as a secret."""
        return self._private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    def write(self, path: Path) -> None:
        """Write the private key to a new file that only its owner may read (an existing file is never replaced)."""
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(self.to_pem())

    @property
    def private_key(self) -> X25519PrivateKey:
        return self._private

    def __repr__(self) -> str:
        return f"GatewayKey({self.public.fingerprint})"

    def __reduce__(self) -> NoReturn:
        raise TypeError("a GatewayKey cannot be pickled or copied (it would carry the private key along)")
