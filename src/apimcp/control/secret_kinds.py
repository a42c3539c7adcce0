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
    # Each user's own value, asked for by URL elicitation: a token pasted in a form (sent as `scheme value` in
    # `header`), or an OAuth 2.0 connection (authorization code with PKCE) to the API's authorization server.
    "user_token": ({"header": False, "scheme": False, "message": False}, {}),
    # With `discover` (MCP services), the server's own authorization server and a registered client instead.
    "user_oauth": (
        {
            "authorization_url": False,
            "token_url": False,
            "client_id": False,
            "discover": False,
            "scopes": False,
            "resource": False,
            "header": False,
            "message": False,
        },
        {"client_secret": False},
    ),
    # A backend token exchanged for the caller's own access token (RFC 8693), per caller.
    "oauth_token_exchange": (
        {
            "token_url": True,
            "client_id": True,
            "audience": False,
            "resource": False,
            "scopes": False,
            "subject_token_type": False,
            "requested_token_type": False,
            "header": False,
        },
        {"client_secret": True},
    ),
    # The gateway's client at an authorization server's introspection endpoint (RFC 7662), for opaque tokens
    # presented to an OAuth-protected plan (its `introspection_secret_id`).
    "oauth_introspection": ({"url": True, "client_id": True}, {"client_secret": True}),
    # TLS towards a backend: a CA to trust and/or a client certificate with its key (PEM). The
    # certificate is sealed with its key so that both are rotated together.
    "tls": ({"ca": False}, {"certificate": False, "private_key": False}),
}
LOCATIONS = ("header", "query", "cookie")

PER_USER = ("user_token", "user_oauth", "oauth_token_exchange")
"""Kinds whose value differs per user: a plan carries them among its backend secrets."""
INBOUND = ("oauth_introspection",)
"""Kinds a plan uses to check who calls, never sent to a backend."""
