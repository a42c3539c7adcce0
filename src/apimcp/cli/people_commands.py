"""`apimcp members`, `apimcp switch-org`, `apimcp join` and `apimcp whoami`: people, their roles and their
organizations."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

import typer

from apimcp.cli import context, output
from apimcp.cli.client import ControlPlaneClient
from apimcp.cli.common import EXIT_USAGE, client, fail, reporting
from apimcp.cli.output import Format, OutputOption
from apimcp.safety.plain_http import refusal

members_app = typer.Typer(
    help="The organization's people and their roles (admin, editor, viewer); changes need the admin role.",
    no_args_is_help=True,
)
ROLES = ("admin", "editor", "viewer")
MEMBER_COLUMNS: list[output.Column] = [
    ("USER", "id"),
    ("EMAIL", "email"),
    ("NAME", "display_name"),
    ("ROLE", "role"),
    ("SINCE", "since"),
    ("LAST SIGN-IN", "last_sign_in_at"),
]
INVITATION_COLUMNS: list[output.Column] = [
    ("ID", "id"),
    ("EMAIL", "email"),
    ("ROLE", "role"),
    ("EXPIRES", "expires_at"),
    ("INVITED BY", "invited_by"),
]
RoleArgument = Annotated[str, typer.Argument(help="admin, editor or viewer.")]


def _role(role: str) -> str:
    if role not in ROLES:
        fail(f"a role is one of {', '.join(ROLES)}", EXIT_USAGE)
    return role


def _members(api: ControlPlaneClient) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = api.get("/members")
    return [{**m["user"], "role": m["role"], "since": m["since"]} for m in found]


def _member(api: ControlPlaneClient, reference: str) -> dict[str, Any]:
    """A member by user id or e-mail (case-insensitive)."""
    found = [m for m in _members(api) if reference in (m["id"], m["email"]) or m["email"] == reference.lower()]
    if not found:
        fail(f"no member {reference!r} (give an e-mail or a user id; `apimcp members list` shows them)")
    return found[0]


@members_app.command("list")
def list_members(
    invitations: Annotated[bool, typer.Option("--invitations", help="List the pending invitations instead.")] = False,
    out: OutputOption = Format.table,
) -> None:
    """The organization's members and their roles (or its pending invitations)."""
    api = client()
    with reporting():
        if invitations:
            output.rows(api.get("/invitations"), INVITATION_COLUMNS, out, "No pending invitations.")
        else:
            output.rows(_members(api), MEMBER_COLUMNS, out, "No members yet: `apimcp members invite EMAIL ROLE`.")


@members_app.command("invite")
def invite(
    email: Annotated[str, typer.Argument(help="The person's e-mail address.")],
    role: RoleArgument,
    days: Annotated[int, typer.Option(help="The invitation expires after this many days (1-90).")] = 7,
    out: OutputOption = Format.table,
) -> None:
    """Invite a person with a role; the one-time code is shown this once: hand it to them (`apimcp join CODE`)."""
    api = client()
    with reporting():
        issued = api.post("/invitations", {"email": email, "role": _role(role), "valid_days": days})
    if out is Format.json:
        output.record(issued, out)
        return
    code = issued.pop("code")
    output.record(issued, out, title=f"Invited {issued['email']} as {issued['role']}")
    typer.echo(f"Invitation code (shown once, valid until {issued['expires_at']}): {code}")


@members_app.command("set-role")
def set_role(
    member: Annotated[str, typer.Argument(help="The member's e-mail or user id.")],
    role: RoleArgument,
) -> None:
    """Give a member another role; their tokens act with it at once."""
    api = client()
    with reporting():
        found = _member(api, member)
        changed = api.patch(f"/members/{found['id']}", {"role": _role(role)})
    typer.echo(f"{changed['user']['email']} is now {changed['role']}")


@members_app.command("remove")
def remove(member: Annotated[str, typer.Argument(help="The member's e-mail or user id.")]) -> None:
    """End a membership; the person's tokens of this organization are revoked at once."""
    api = client()
    with reporting():
        found = _member(api, member)
        api.delete(f"/members/{found['id']}")
    typer.echo(f"Removed {found['email']}; their tokens of this organization are revoked")


def switch_org(name: Annotated[str, typer.Argument(help="An organization you are a member of.")]) -> None:
    """Act in another of your organizations: the next commands use it (`apimcp whoami` lists them)."""
    try:
        current = context.load()
    except ValueError as exc:
        fail(str(exc))
    if current is None:
        fail("not logged in: run `apimcp login <url>` first")
    api = client()
    with reporting():
        me = api.get("/me")
    if name == me["organization"]:
        typer.echo(f"Already in organization {name} ({me['role']})")
        return
    if me["user"] is None:
        fail(f"this is a service account's token: it acts only in organization {me['organization']}")
    roles = {m["organization"]: m["role"] for m in me["memberships"]}
    if name not in roles:
        known = ", ".join(sorted(roles)) or "none"
        fail(f"{me['user']['email']} is not a member of organization {name!r} (member of: {known})")
    path = context.save(replace(current, organization=name))
    typer.echo(f"Switched to organization {name} as {roles[name]} (context saved to {path})")


def whoami(out: OutputOption = Format.table) -> None:
    """Who the CLI acts as, where, with which role, and the person's organizations."""
    api = client()
    with reporting():
        me = api.get("/me")
    if out is Format.json:
        output.record(me, out)
        return
    who = me["user"]["email"] if me["user"] is not None else f"service account {me['service_account']}"
    typer.echo(f"{who}: {me['role']} in organization {me['organization']}")
    for membership in me["memberships"]:
        mark = "*" if membership["organization"] == me["organization"] else " "
        typer.echo(f"{mark} {membership['organization']} ({membership['role']})")


def join(
    code: Annotated[str, typer.Argument(help="The invitation code an admin gave you.")],
    url: Annotated[
        str | None, typer.Option(help="The control plane (default: the logged-in one, else 127.0.0.1:8080).")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Your name, when you join for the first time.")] = None,
) -> None:
    """Accept an invitation. Logged in as yourself, you join with that identity; otherwise you become a new person
    of the invitation's e-mail, and the CLI logs in with your new token."""
    current = context.load()
    target = (url or (current.url if current is not None else context.DEFAULT_URL)).rstrip("/")
    signed_in = current is not None and current.url == target
    problem = refusal(target, allow_http=signed_in and current is not None and current.allow_http)
    if problem is not None:
        fail(problem, EXIT_USAGE)
    body = {"code": code, "display_name": name}
    with reporting():
        api = client() if signed_in else ControlPlaneClient(target, None)
        if signed_in and api.get("/me")["user"] is None:  # a service account's token: the code alone
            api = ControlPlaneClient(target, None, ca_file=current.ca_file if current is not None else None)
        accepted = api.post("/invitations/accept", body)
    typer.echo(f"Joined organization {accepted['organization']} as {accepted['role']}")
    if accepted.get("token"):
        path = context.save(context.Context(target, accepted["token"], accepted["organization"]))
        typer.echo(f"Logged in as {accepted['user']['email']} (context saved to {path})")
    elif current is not None:
        typer.echo(f"`apimcp switch-org {accepted['organization']}` acts there")
