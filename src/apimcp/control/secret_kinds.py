"""The kinds of backend secrets: which fields are public and which are sealed.

Kept apart from the storage code so that the CLI can prompt for the right values
without loading the database layer.
"""

from __future__ import annotations

# kind -> (public fields, sealed fields); each field maps to whether it is required
KINDS: dict[str, tuple[dict[str, bool], dict[str, bool]]] = {
    "bearer": ({}, {"token": True}),
    "basic": ({"username": True}, {"password": True}),
    "api_key": ({"name": True, "location": False}, {"value": True}),
    "oauth_client_credentials": (
        {"token_url": True, "client_id": True, "scopes": False, "audience": False},
        {"client_secret": True},
    ),
    # TLS towards a backend: a CA to trust and/or a client certificate with its key (PEM). The
    # certificate is sealed with its key so that both are rotated together.
    "tls": ({"ca": False}, {"certificate": False, "private_key": False}),
}
LOCATIONS = ("header", "query", "cookie")
