"""The identity options of `plan create` and `plan update`: OAuth settings, the header policy, the audit trail.

OAuth options given to `plan update` change only what they name: the plan's other OAuth settings are kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import orjson
import typer

from apimcp.cli.client import ControlPlaneClient
from apimcp.cli.common import EXIT_USAGE, fail, find

Issuer = Annotated[
    list[str], typer.Option("--issuer", help="inbound oauth: an authorization server whose tokens are accepted.")
]
JwksUri = Annotated[str | None, typer.Option(help="inbound oauth: its signing keys (default: from its metadata).")]
Audience = Annotated[
    list[str], typer.Option("--audience", help="inbound oauth: accepted besides the exposition's own URLs.")
]
AudienceCheck = Annotated[
    bool | None,
    typer.Option("--audience-check/--no-audience-check", help="inbound oauth: require tokens issued for it."),
]
Scope = Annotated[list[str], typer.Option("--scope", help="inbound oauth: a scope every token must carry.")]
ToolScope = Annotated[
    list[str], typer.Option("--tool-scope", help="inbound oauth: TOOL=SCOPE[,SCOPE] a tool needs besides.")
]
IntrospectionSecret = Annotated[
    str | None,
    typer.Option(help="inbound oauth: an oauth_introspection secret, to check opaque tokens; '' removes it."),
]
HeaderPolicy = Annotated[
    str | None,
    typer.Option(
        help='Client headers backends receive, as JSON: {"allow": [], "deny": [], "rename": {"From": "To"}, '
        '"passthrough": false, "forwarded": true}; \'\' for the defaults.'
    ),
]
Audit = Annotated[bool | None, typer.Option("--audit/--no-audit", help="Record an audit event per request.")]


def _tool_scopes(items: list[str]) -> dict[str, list[str]]:
    scopes: dict[str, list[str]] = {}
    for item in items:
        tool, _, raw = item.partition("=")
        named = [s for s in raw.replace(",", " ").split() if s]
        if not tool or not named:
            fail(f"--tool-scope expects TOOL=SCOPE[,SCOPE], got {item!r}", EXIT_USAGE)
        scopes[tool] = named
    return scopes


def identity_values(
    api: ControlPlaneClient, given: Mapping[str, Any], current: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Plan fields for the identity options in `given` (a command's locals); `current`: the plan, on update."""
    values: dict[str, Any] = {}
    oauth: dict[str, Any] = dict((current or {}).get("oauth") or {})
    changed = False
    for key, option in (("issuers", "issuer"), ("audiences", "audience"), ("scopes", "scope")):
        if given[option]:
            oauth[key] = [] if given[option] == [""] else given[option]
            changed = True
    if given["jwks_uri"] is not None:
        oauth.pop("jwks_uri", None)
        if given["jwks_uri"]:
            oauth["jwks_uri"] = given["jwks_uri"]
        changed = True
    if given["audience_check"] is not None:
        oauth["audience_check"] = given["audience_check"]
        changed = True
    if given["tool_scope"]:
        oauth["tool_scopes"] = {} if given["tool_scope"] == [""] else _tool_scopes(given["tool_scope"])
        changed = True
    if changed:
        values["oauth"] = oauth
        if given["inbound"] is None and (current or {}).get("inbound_mode") != "oauth":
            values["inbound_mode"] = "oauth"  # OAuth settings mean OAuth
    secret = given["introspection_secret"]
    if secret is not None:
        values["introspection_secret_id"] = find(api, "/secrets", secret, "secret")["id"] if secret else None
    policy = given["header_policy"]
    if policy is not None:
        try:
            values["header_policy"] = orjson.loads(policy) if policy else None
        except orjson.JSONDecodeError as exc:
            fail(f"--header-policy is JSON: {exc}", EXIT_USAGE)
    if given["audit"] is not None:
        values["audit"] = given["audit"]
    return values
