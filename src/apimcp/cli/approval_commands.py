"""`apimcp approvals`: the calls a policy rule sends to an administrator (`approver: admin`), listed, approved or
refused."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from apimcp.cli import output
from apimcp.cli.common import EXIT_USAGE, client, fail, reporting
from apimcp.cli.output import Format, OutputOption

approvals_app = typer.Typer(
    help="Calls waiting for an administrator's approval (approving or refusing needs the admin role).",
    no_args_is_help=True,
)
STATUSES = ("pending", "approved", "refused", "used", "all")
COLUMNS: list[output.Column] = [
    ("ID", "id"),
    ("TOOL", "tool"),
    ("CALLER", "caller"),
    ("QUESTION", "question"),  # whole: an admin approves nothing they were not shown
    ("STATUS", lambda item: f"{item['status']} (expired)" if item.get("expired") else item["status"]),
    ("EXPIRES", "expires_at"),
]
IdArgument = Annotated[str, typer.Argument(help="The request's id (`apimcp approvals list` shows them).")]


@approvals_app.command("list")
def list_approvals(
    status: Annotated[str, typer.Option(help=f"One of {', '.join(STATUSES)}.")] = "pending",
    out: OutputOption = Format.table,
) -> None:
    """The approval requests with this status, newest first (pending: those still waiting for a decision)."""
    if status not in STATUSES:
        fail(f"--status is one of {', '.join(STATUSES)}; got {status!r}", EXIT_USAGE)
    api = client()
    with reporting():
        found = api.get("/approvals", status=status)
    empty = "No call is waiting for an approval." if status == "pending" else f"No {status} approval request."
    output.rows(found, COLUMNS, out, "No approval request." if status == "all" else empty)


def _decide(approval_id: str, verb: str, out: Format) -> None:
    api = client()
    with reporting():
        decided: dict[str, Any] = api.post(f"/approvals/{approval_id}/{verb}")
    output.record(decided, out, title=f"{decided['status'].capitalize()} {decided['tool']} ({decided['id']})")


@approvals_app.command("approve")
def approve(approval_id: IdArgument, out: OutputOption = Format.table) -> None:
    """Approve a pending request: the call goes through once, when the caller makes it again before it expires."""
    _decide(approval_id, "approve", out)


@approvals_app.command("refuse")
def refuse(approval_id: IdArgument, out: OutputOption = Format.table) -> None:
    """Refuse a pending request: the call is refused until the request expires."""
    _decide(approval_id, "refuse", out)
