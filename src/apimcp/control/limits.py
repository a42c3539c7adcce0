"""The control plane's limits on what a caller may send, with safe defaults.

One frozen value given to the control plane when it is opened; nothing here reads
the environment (settings and command-line flags are mapped onto it by the caller).
Body and header limits are enforced in front of the API, before any token is
checked; value limits when a secret is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

KiB = 1024
MiB = 1024 * KiB


@dataclass(frozen=True, slots=True)
class ApiLimits:
    max_json_bytes: int = 1 * MiB
    """Any request body that is not a description upload (JSON bodies, including imports by URL): 413 above."""
    max_upload_bytes: int = 64 * MiB + 64 * KiB
    """A multipart upload of a description or an artifact: the 64 MiB description limit plus room for the form's
    envelope. 413 above."""
    body_seconds: float = 60.0
    """Time from the request's start for its whole body to arrive; a body still dripping in gets 408."""
    max_header_count: int = 100
    """Request header fields: 431 above."""
    max_header_bytes: int = 32 * KiB
    """Request header names and values together: 431 above."""
    max_secret_value_bytes: int = 16 * KiB
    """One value or field of a bearer, basic, api_key or oauth_client_credentials secret (UTF-8): 422 above."""
    max_pem_bytes: int = 256 * KiB
    """One PEM text of a tls secret (CA bundle, certificate chain, private key): 422 above."""

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if not value > 0:
                raise ValueError(f"{item.name} must be positive, not {value!r}")


@dataclass(frozen=True, slots=True)
class UpstreamRefresh:
    """How often the control plane reads each MCP service's server again (`control.upstream_refresh`)."""

    every_seconds: float = 3600.0
    """0: never (an admin refreshes with `apimcp service refresh`)."""

    def __post_init__(self) -> None:
        if self.every_seconds < 0:
            raise ValueError("every_seconds must be 0 (never) or more")
