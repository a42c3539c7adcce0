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


COLUMNS: list[output.Column] = [
    ("TIME", _when),
    ("EXPOSITION", "exposition"),
    ("ACTION", "action"),
    ("TARGET", lambda e: e.get("target") or ""),
    ("OUTCOME", _outcome),
    ("MS", lambda e: "" if e.get("duration_ms") is None else f"{e['duration_ms']:.1f}"),
    ("USER", lambda e: e.get("user") or ""),
    ("CLIENT", lambda e: e.get("client") or ""),
]


def audit(
    limit: Annotated[int, typer.Option(help="How many events, newest first.")] = 50,
    exposition: Annotated[str | None, typer.Option(help="Only this exposition (id or name).")] = None,
    out: OutputOption = Format.table,
) -> None:
    """The latest audit events (plans with --audit record one per MCP request, answered or refused)."""
    api = client()
    with reporting():
        events = api.get("/audit", limit=str(limit), exposition=exposition)
    output.rows(events, COLUMNS, out, "No audit events yet: `apimcp plan update <plan> --audit`, then call it.")
