"""The certificate a listener presents to its clients."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ServerTls:
    """The certificate (chain, PEM) and private key a listener presents to its clients."""

    certificate: Path
    key: Path

    def check(self) -> None:
        """Load both files as the server will, so that a wrong path or a mismatched key fails before serving."""
        try:
            ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(self.certificate, self.key)
        except FileNotFoundError as exc:
            raise ValueError(f"TLS: cannot read {exc.filename}") from None
        except (ssl.SSLError, OSError) as exc:
            raise ValueError(
                f"TLS: {self.certificate} and {self.key} are not a PEM certificate and its private key ({exc})"
            ) from None
