"""Inbound identity: API keys and OAuth 2.1 access tokens (JWT and introspection), protected resource
metadata (RFC 9728), scopes per exposition and per tool."""
