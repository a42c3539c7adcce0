"""`apimcp audit`: the latest audit events of the organization's expositions."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from apimcp.cli import output
from apimcp.cli.common import client, reporting
from apimcp.cli.output import Format, OutputOption


def _when(event: dict[str, Any]) -> str:
    return datetime.fromtimestamp(float(event["time"]), UTC).strftime("%Y-%m-%d %H:%M:%S")


def _outcome(event: dict[str, Any]) -> str:
    why = event.get("error_code") or event.get("reason")
    return f"{event['outcome']} ({why})" if why else str(event["outcome"])


def _count(event: dict[str, Any]) -> str:
    """A summary of refusals: how many it stands for (an event stands for one)."""
    count = event.get("count")
    return f"\u00d7{count}" if isinstance(count, int) and count > 1 else ""


def _clients(event: dict[str, Any]) -> str:
    return "(many)" if event.get("overflow") is True else event.get("client") or ""


COLUMNS: list[output.Column] = [
    ("TIME", _when),
    ("COUNT", _count),
    ("EXPOSITION", "exposition"),
    ("ACTION", "action"),
    ("TARGET", lambda e: e.get("target") or ""),
    ("OUTCOME", _outcome),
    ("MS", lambda e: "" if e.get("duration_ms") is None else f"{e['duration_ms']:.1f}"),
    ("USER", lambda e: e.get("user") or ""),
    ("CLIENT", _clients),
]


def audit(
    limit: Annotated[int, typer.Option(help="How many events, newest first.")] = 50,
    exposition: Annotated[str | None, typer.Option(help="Only this exposition (id or name).")] = None,
    refused: Annotated[
        bool | None,
        typer.Option("--refused/--answered", help="Only refusals (401, 403, 429), or only the other events."),
    ] = None,
    trail: Annotated[
        str | None,
        typer.Option(
            help="Only one trail, each kept apart: refused, routine (pings, listings), decided "
            "(approvals, guardrail findings, signed-in callers' calls a policy denied), answered (every other request)."
        ),
    ] = None,
    out: OutputOption = Format.table,
) -> None:
    """The latest audit events (plans with --audit record one per MCP request, answered or refused; beyond a few
    refusals alike in a minute, one event counts the rest: COUNT)."""
    api = client()
    with reporting():
        chosen = None if refused is None else str(refused).lower()
        events = api.get("/audit", limit=str(limit), exposition=exposition, refused=chosen, trail=trail)
    output.rows(events, COLUMNS, out, "No audit events yet: `apimcp plan update <plan> --audit`, then call it.")
