"""`apimcp login`, `logout`, `secret`, `token` and `organization`: who may do what, with which credentials."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from apimcp.cli import context, output
from apimcp.cli.client import ControlPlaneClient
from apimcp.cli.common import EXIT_USAGE, client, fail, find, pairs, reporting
from apimcp.cli.output import Format, OutputOption
from apimcp.control.secret_kinds import KINDS
from apimcp.safety.plain_http import refusal

secret_app = typer.Typer(help="Backend secrets: values are sealed and never shown again.", no_args_is_help=True)
token_app = typer.Typer(
    help="API tokens of the organization (admin, user, viewer and gateway tokens); an admin's.", no_args_is_help=True
)
org_app = typer.Typer(help="Organizations (needs the control plane's admin token).", no_args_is_help=True)

SECRET_COLUMNS: list[output.Column] = [
    ("ID", "id"),
    ("NAME", "name"),
    ("KIND", "kind"),
    ("FIELDS", "fields"),
    ("KEY", "key_id"),
    ("UPDATED", "updated_at"),
]
KIND_HELP = (
    "user (the editor role: changes services, plans, expositions, secrets), viewer (reads only), admin (also "
    "tokens, gateway keys, members) or gateway (for `apimcp gateway`)."
)
TOKEN_COLUMNS: list[output.Column] = [
    ("ID", "id"),
    ("NAME", "name"),
    ("KIND", "kind"),
    ("PREFIX", "prefix"),
    ("EXPIRES", "expires_at"),
    ("REVOKED", "revoked_at"),
    ("LAST USED", "last_used_at"),
]


def login(
    url: Annotated[str, typer.Argument(help="The control plane, e.g. http://127.0.0.1:8080.")] = context.DEFAULT_URL,
    token: Annotated[
        str | None, typer.Option(help="An admin or user token (default: $APIMCP_TOKEN, else asked without echo).")
    ] = None,
    ca: Annotated[
        Path | None, typer.Option(help="Trust this CA (PEM) for an https:// control plane, e.g. a private CA.")
    ] = None,
    allow_http: Annotated[
        bool,
        typer.Option("--allow-http", help="Accept plain http:// off loopback (the token is sent in clear)."),
    ] = False,
    sso: Annotated[
        bool,
        typer.Option(
            "--sso", help="Sign in as a person through your company's provider (in the browser), not a token."
        ),
    ] = False,
    work_in: Annotated[
        str | None,
        typer.Option("--organization", help="With --sso: the organization to work in (default: your first)."),
    ] = None,
    browser: Annotated[
        bool, typer.Option("--browser/--no-browser", help="With --sso: open the sign-in page (else only print it).")
    ] = True,
) -> None:
    """Check a token against a control plane and remember both for the next commands (or, with --sso, sign in as a
    person: the browser goes through the company's provider and back to this command on a loopback port)."""
    problem = refusal(url, allow_http=allow_http)
    if problem is not None:
        fail(problem, EXIT_USAGE)
    ca_file = str(ca.resolve()) if ca is not None else None
    if sso and token:
        fail("--sso signs you in as a person: give it no --token", EXIT_USAGE)
    value = _signed_in(url, work_in, browser, ca_file) if sso else token or os.environ.get(context.TOKEN_VARIABLE)
    if not value:
        if not sys.stdin.isatty():
            fail("give --token or set APIMCP_TOKEN (no terminal to ask on)", EXIT_USAGE)
        value = typer.prompt("Token", hide_input=True)
    try:
        api = ControlPlaneClient(url, value, ca_file=ca_file)
    except (OSError, ValueError) as exc:
        fail(f"--ca {ca}: not a readable PEM CA certificate ({exc})", EXIT_USAGE)
    with reporting():
        organization = api.get("/organization")
    saved = context.Context(api.url, value, organization["name"], ca_file=ca_file, allow_http=allow_http)
    path = context.save(saved)
    typer.echo(f"Logged in to {api.url} as organization {organization['name']} (context saved to {path})")


def _to_stderr(text: str) -> None:
    typer.echo(text, err=True)


def _signed_in(url: str, organization: str | None, browser: bool, ca_file: str | None) -> str:
    """The token of a person signed in through the control plane's single sign-on."""
    from apimcp.cli.sso_login import SignInFailed, sign_in_code  # noqa: PLC0415 - only for --sso

    anonymous = ControlPlaneClient(url, "", ca_file=ca_file)
    try:
        code = sign_in_code(
            anonymous.url, organization, open_browser=browser, tell=lambda text: typer.echo(text, err=True)
        )
    except SignInFailed as exc:
        fail(f"single sign-on did not sign you in: {exc}")
    with reporting():
        signed = anonymous.post("/sso/session", {"code": code})
    typer.echo(f"Signed in as {signed['email']} ({signed['role']} of {signed['organization']})", err=True)
    return str(signed["token"])


def logout() -> None:
    """Forget the saved context."""
    typer.echo("Logged out." if context.forget() else "There was no saved context.")


# --- secrets -----------------------------------------------------------------------------------------


def _files(given: list[str], option: str) -> dict[str, str]:
    """NAME=PATH pairs read as text (PEM certificates and keys)."""
    texts = {}
    for name, path in pairs(given, option).items():
        try:
            texts[name] = Path(path).read_text()
        except (OSError, UnicodeDecodeError) as exc:
            fail(f"{option} {name}={path}: cannot read the file: {exc}", EXIT_USAGE)
    return texts


def _values(
    kind: str, given: list[str], from_env: list[str], required_only: bool = True, from_files: list[str] = []
) -> dict[str, str]:
    """Sealed values from --value, --value-env, --value-file, or asked without echo for the missing required ones."""
    values = {**pairs(given, "--value"), **_files(from_files, "--value-file")}
    for name, variable in pairs(from_env, "--value-env").items():
        found = os.environ.get(variable)
        if found is None:
            fail(f"--value-env {name}={variable}: the environment variable {variable} is not set", EXIT_USAGE)
        values[name] = found
    for name, required in KINDS[kind][1].items():
        if name not in values and (required or not required_only):
            if not sys.stdin.isatty():
                fail(
                    f"{kind} secrets need {name}: give --value-env {name}=VARIABLE (or --value {name}=...)", EXIT_USAGE
                )
            values[name] = typer.prompt(name, hide_input=True)
    return values


def _secret_kind(kind: str) -> str:
    if kind not in KINDS:
        fail(f"--kind must be one of {', '.join(KINDS)}", EXIT_USAGE)
    return kind


Values = Annotated[list[str], typer.Option("--value", help="A secret value NAME=VALUE (visible in shell history).")]
ValuesFromEnv = Annotated[
    list[str], typer.Option("--value-env", help="A secret value read from an environment variable: NAME=VARIABLE.")
]
ValuesFromFiles = Annotated[
    list[str], typer.Option("--value-file", help="A secret value read from a file: NAME=PATH (a PEM key).")
]


@secret_app.command("create")
def create_secret(
    name: Annotated[str, typer.Argument(help="Secret name, unique in the organization.")],
    kind: Annotated[str, typer.Option(help=f"One of {', '.join(KINDS)}.")],
    field: Annotated[list[str], typer.Option("--field", help="A public field NAME=VALUE (e.g. username=bob).")] = [],
    field_file: Annotated[
        list[str], typer.Option("--field-file", help="A public field read from a file: NAME=PATH (a PEM certificate).")
    ] = [],
    value: Values = [],
    value_env: ValuesFromEnv = [],
    value_file: ValuesFromFiles = [],
    description: Annotated[str | None, typer.Option(help="What the secret is for.")] = None,
    out: OutputOption = Format.table,
) -> None:
    """Store a backend secret. Missing values are asked for without echo.

    Fields by kind: bearer (values: token); basic (fields: username; values: password);
    api_key (fields: name, location=header|query|cookie; values: value);
    oauth_client_credentials (fields: token_url, client_id, scopes, audience; values: client_secret);
    tls, for the backend connection (fields: ca; values: certificate, private_key; all PEM, e.g.
    --field-file ca=ca.pem --value-file certificate=client.pem --value-file private_key=client-key.pem);
    user_token, each user pastes their own (fields: header, scheme, message; no values);
    user_oauth, each user connects their account (fields: authorization_url, token_url, client_id, scopes,
    resource; values: client_secret, optional; or, for MCP services, --field discover=true and nothing else
    needed: the server's own authorization server is found and the gateway registers itself);
    oauth_token_exchange, RFC 8693 on the caller's behalf (fields: token_url, client_id, audience, resource,
    scopes; values: client_secret);
    oauth_introspection, for a plan's opaque tokens (fields: url, client_id; values: client_secret).
    A value may be a reference the gateways resolve from their environment, named after the organization:
    --value 'token=${env:APIMCP_SECRET_default__API_TOKEN}' (see docs/identity.md).
    """
    kind = _secret_kind(kind)
    api = client()
    fields: dict[str, Any] = {**pairs(field, "--field"), **_files(field_file, "--field-file")}
    if fields.get("discover") in ("true", "false"):  # the one boolean field
        fields["discover"] = fields["discover"] == "true"
    body = {
        "name": name,
        "kind": kind,
        "fields": fields,
        "values": _values(kind, value, value_env, from_files=value_file),
        "description": description,
    }
    with reporting():
        secret = api.post("/secrets", body)
    output.record(secret, out, title=f"Created secret {secret['name']} ({secret['id']})")


@secret_app.command("list")
def list_secrets(out: OutputOption = Format.table) -> None:
    """The organization's secrets (metadata only: values are never shown)."""
    api = client()
    with reporting():
        output.rows(
            api.get("/secrets"), SECRET_COLUMNS, out, "No secrets yet: `apimcp secret create <name> --kind ...`."
        )


@secret_app.command("rotate")
def rotate_secret(
    secret: Annotated[str, typer.Argument(help="id or name")],
    value: Values = [],
    value_env: ValuesFromEnv = [],
    value_file: ValuesFromFiles = [],
    out: OutputOption = Format.table,
) -> None:
    """Replace a secret's values; gateways use the new ones within a second."""
    api = client()
    with reporting():
        found = find(api, "/secrets", secret, "secret")
        values = _values(found["kind"], value, value_env, from_files=value_file)
        rotated = api.put(f"/secrets/{found['id']}/values", {"values": values})
    output.record(rotated, out, title=f"Rotated secret {rotated['name']}")


@secret_app.command("delete")
def delete_secret(secret: Annotated[str, typer.Argument(help="id or name")]) -> None:
    """Delete a secret (refused while a plan uses it)."""
    api = client()
    with reporting():
        found = find(api, "/secrets", secret, "secret")
        api.delete(f"/secrets/{found['id']}")
    typer.echo(f"Deleted secret {found['name']}")


# --- tokens ------------------------------------------------------------------------------------------


@token_app.command("create")
def create_token(
    name: Annotated[str, typer.Argument(help="What the token is for.")],
    kind: Annotated[
        str,
        typer.Option(help=KIND_HELP),
    ] = "user",
    days: Annotated[int | None, typer.Option(help="Expire after this many days (default: never).")] = None,
    member: Annotated[
        str | None,
        typer.Option(help="Bind it to this member (e-mail or user id): at most their role, dies with the membership."),
    ] = None,
    out: OutputOption = Format.table,
) -> None:
    """Issue a token (for a service account named as the token, or a member's); its value is shown this once."""
    api = client()
    with reporting():
        body: dict[str, Any] = {"name": name, "kind": kind, "valid_days": days}
        if member is not None:
            found = [m["user"] for m in api.get("/members") if member in (m["user"]["id"], m["user"]["email"])]
            if not found:
                fail(f"no member {member!r} (`apimcp members list` shows them)")
            body["user_id"] = found[0]["id"]
        issued = api.post("/tokens", body)
    if out is Format.json:
        output.record(issued, out)
        return
    value = issued.pop("token")
    output.record(issued, out, title=f"Created {issued['kind']} token {issued['name']} ({issued['id']})")
    typer.echo(f"Token (shown once, keep it safe): {value}")


@token_app.command("list")
def list_tokens(out: OutputOption = Format.table) -> None:
    """The organization's tokens (never their values), revoked ones too."""
    api = client()
    with reporting():
        output.rows(api.get("/tokens"), TOKEN_COLUMNS, out, "No tokens.")


@token_app.command("revoke")
def revoke_token(token: Annotated[str, typer.Argument(help="id or name")]) -> None:
    """Revoke a token at once."""
    api = client()
    with reporting():
        found = find(api, "/tokens", token, "token", lambda t: t["name"] == token and t["revoked_at"] is None)
        api.delete(f"/tokens/{found['id']}")
    typer.echo(f"Revoked token {found['name']} ({found['id']})")


# --- organizations -------------------------------------------------------------------------------------


@org_app.command("create")
def create_organization(
    name: Annotated[str, typer.Argument(help="1-63 lower-case letters, digits or '-'.")],
    url: Annotated[str | None, typer.Option(help="The control plane (default: the logged-in one).")] = None,
    out: OutputOption = Format.table,
) -> None:
    """Create an organization with the admin token ($APIMCP_ADMIN_TOKEN); prints its first admin token once."""
    admin = os.environ.get("APIMCP_ADMIN_TOKEN")
    if not admin:
        fail("set APIMCP_ADMIN_TOKEN to the control plane's admin token", EXIT_USAGE)
    target = (url or client().url).rstrip("/")
    current = context.load()
    saved = current if current is not None and current.url == target else None  # its CA and HTTP choice apply
    problem = refusal(target, allow_http=saved is not None and saved.allow_http)
    if problem is not None:
        fail(problem, EXIT_USAGE)
    with reporting():
        api = ControlPlaneClient(target, admin, ca_file=saved.ca_file if saved else None)
        created = api.post("/organizations", {"name": name})
    if out is Format.json:
        output.record(created, out)
        return
    token = created.pop("token")
    output.record(created, out, title=f"Created organization {created['name']}")
    typer.echo(f"First admin token (shown once): {token}")
    typer.echo(f"Log in with: apimcp login {target} --token <token>")
