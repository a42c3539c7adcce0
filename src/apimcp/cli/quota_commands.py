"""`apimcp quotas`: how many expositions, gateway groups and gateways the organization may have, and uses."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from apimcp.cli import output
from apimcp.cli.common import EXIT_USAGE, client, fail, reporting
from apimcp.cli.output import Format, OutputOption

quotas_app = typer.Typer(help="The organization's quotas of expositions, gateway groups and gateways.")

NAMES = {"expositions": "expositions", "gateway_groups": "gateway groups", "gateways": "gateways"}
NO_LIMIT = ("", "none", "unlimited")


def _rows(shown: dict[str, Any]) -> list[dict[str, Any]]:
    def limit(quota: dict[str, Any]) -> Any:
        return "unlimited" if quota["limit"] is None else quota["limit"]

    return [{"quota": NAMES[kind], "limit": limit(quota), "used": quota["used"]} for kind, quota in shown.items()]


def _print(shown: dict[str, Any], out: Format) -> None:
    if out is Format.json:
        typer.echo(output.json_text(shown))
        return
    output.rows(_rows(shown), [("QUOTA", "quota"), ("LIMIT", "limit"), ("USED", "used")], out, "")


@quotas_app.command("show")
def show(out: OutputOption = Format.table) -> None:
    """Each quota and how many the organization has."""
    api = client()
    with reporting():
        shown = api.get("/organization/quotas")
    _print(shown, out)


def _limit(option: str, value: str) -> int | None:
    if value.strip().lower() in NO_LIMIT:
        return None
    try:
        limit = int(value)
    except ValueError:
        fail(f"{option} is a whole number, or '' (or none) for no limit; got {value!r}", EXIT_USAGE)
    if limit < 0:
        fail(f"{option} is a whole number from 0, or '' (or none) for no limit; got {value!r}", EXIT_USAGE)
    return limit


Limit = Annotated[str | None, typer.Option(help="How many at most; '' or none: no limit.")]


@quotas_app.command("set")
def set_quotas(
    expositions: Limit = None,
    gateway_groups: Limit = None,
    gateways: Limit = None,
    out: OutputOption = Format.table,
) -> None:
    """Set quotas (an admin token); those not named stay as they are. Nothing in use is removed: a quota below it
    refuses the next one."""
    given = {"expositions": expositions, "gateway_groups": gateway_groups, "gateways": gateways}
    body = {kind: _limit(f"--{kind.replace('_', '-')}", value) for kind, value in given.items() if value is not None}
    if not body:
        fail("name a quota: --expositions, --gateway-groups or --gateways", EXIT_USAGE)
    api = client()
    with reporting():
        shown = api.put("/organization/quotas", body)
    _print(shown, out)
