"""TLS towards a backend: a CA to trust instead of the system's, and a client certificate for mutual TLS.

The same settings serve every kind of backend: gRPC channels take the PEM texts
as they are; HTTP backends (REST, GraphQL) get an `ssl.SSLContext` built once
when the backend is made.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True)
class TlsSettings:
    ca_pem: bytes | None = None
    client_cert_pem: bytes | None = None
    client_key_pem: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if (self.client_cert_pem is None) != (self.client_key_pem is None):
            raise ValueError("a client certificate for TLS needs both the certificate and its private key")


def client_context(tls: TlsSettings) -> ssl.SSLContext:
    """A client context trusting `tls.ca_pem` (else the system's roots), presenting the client certificate."""
    try:
        context = ssl.create_default_context(cadata=tls.ca_pem.decode() if tls.ca_pem else None)
    except (ssl.SSLError, ValueError) as exc:
        raise ValueError(f"the TLS CA is not a usable PEM certificate: {exc}") from None
    if tls.client_cert_pem is not None and tls.client_key_pem is not None:
        _load_chain(context, tls.client_cert_pem, tls.client_key_pem)
    return context


def _load_chain(context: ssl.SSLContext, certificate: bytes, key: bytes) -> None:
    # `ssl` reads a certificate chain from files only: written to a private folder, read, removed at once.
    with tempfile.TemporaryDirectory(prefix="apimcp-tls-") as folder:
        os.chmod(folder, 0o700)
        cert_file, key_file = Path(folder) / "certificate.pem", Path(folder) / "key.pem"
        cert_file.write_bytes(certificate)
        key_file.touch(0o600)
        key_file.write_bytes(key)
        try:
            context.load_cert_chain(cert_file, key_file)
        except ssl.SSLError as exc:
            raise ValueError(f"the TLS client certificate and key do not load: {exc.reason or exc}") from None
