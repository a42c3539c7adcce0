"""`apimcp history`, `apimcp diff`, `apimcp rollback`: who changed what and when, what differs between two versions
of a plan or an exposition, and rolling one back to a version."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from apimcp.cli import output
from apimcp.cli.client import ControlPlaneClient
from apimcp.cli.common import EXIT_USAGE, client, fail, reporting
from apimcp.cli.output import Format, OutputOption

KINDS = ("service", "artifact", "plan", "exposition", "secret", "organization", "template")
MAX_LIMIT = 200


class Restorable(StrEnum):
    plan = "plan"
    exposition = "exposition"


_COLLECTIONS = {Restorable.plan: "plans", Restorable.exposition: "expositions"}


def _by(version: dict[str, Any]) -> str:
    actor = version.get("actor")
    if not actor:
        return "(control plane)"
    return f"{actor.get('name') or actor['token_id']} ({actor.get('role') or '?'})"


def _action(version: dict[str, Any]) -> str:
    restored = version.get("restored_from")
    return f"{version['action']} to v{restored}" if restored is not None else str(version["action"])


COLUMNS: list[output.Column] = [
    ("TIME", "at"),
    ("KIND", "kind"),
    ("OBJECT", lambda v: v.get("object_name") or ""),
    ("ID", "object_id"),
    ("VERSION", "number"),
    ("ACTION", _action),
    ("BY", _by),
]


def _compact(value: Any) -> str:
    return "-" if value is None else output.json_text(value, indent=None)


DIFF_COLUMNS: list[output.Column] = [
    ("FIELD", "path"),
    ("BEFORE", lambda c: _compact(c["before"])),
    ("AFTER", lambda c: _compact(c["after"])),
]


def history(
    kind: Annotated[str | None, typer.Option(help=f"Only objects of this kind: {', '.join(KINDS)}.")] = None,
    object_id: Annotated[str | None, typer.Option("--object", help="Only this object (its id).")] = None,
    limit: Annotated[int, typer.Option(help=f"How many changes, newest first (at most {MAX_LIMIT}).")] = 50,
    offset: Annotated[int, typer.Option(help="Skip this many of the newest first.")] = 0,
    out: OutputOption = Format.table,
) -> None:
    """Who changed what and when: every change of services, artifacts, plans, expositions, secrets (never their
    values) and the organization's policies, newest first."""
    if kind is not None and kind not in KINDS:
        fail(f"--kind is one of {', '.join(KINDS)}", EXIT_USAGE)
    if not 1 <= limit <= MAX_LIMIT:
        fail(f"--limit is 1 to {MAX_LIMIT}", EXIT_USAGE)
    if offset < 0:
        fail("--offset is 0 or more", EXIT_USAGE)
    api = client()
    with reporting():
        page = api.get("/history", kind=kind, object_id=object_id, limit=str(limit), offset=str(offset))
    if out is Format.json:
        typer.echo(output.json_text(page))
        return
    output.rows(page["items"], COLUMNS, out, "No changes recorded yet." if not offset else "No more changes.")
    shown = len(page["items"])
    if shown and page["total"] > offset + shown:
        output.note(f"{offset + 1}-{offset + shown} of {page['total']}: --offset {offset + shown} for more")


def _object_id(api: ControlPlaneClient, kind: Restorable, reference: str) -> str:
    """The id of the plan or exposition `reference` names (an id or a name); a deleted one by its id."""
    items: list[dict[str, Any]] = api.get(f"/{_COLLECTIONS[kind]}")
    if any(item["id"] == reference for item in items):
        return reference
    named = [item["id"] for item in items if item.get("name") == reference]
    if len(named) > 1:
        fail(f"{len(named)} {kind.value}s are named {reference!r}; give one of their ids: {', '.join(named)}")
    return named[0] if named else reference


def diff(
    kind: Annotated[Restorable, typer.Argument(help="plan or exposition")],
    reference: Annotated[str, typer.Argument(metavar="ID", help="Its id or name (a deleted one by its id).")],
    from_version: Annotated[int, typer.Argument(metavar="FROM", help="The version before.")],
    to_version: Annotated[int, typer.Argument(metavar="TO", help="The version after.")],
    out: OutputOption = Format.table,
) -> None:
    """What differs between two versions of a plan or an exposition (`apimcp history --object ID` lists them)."""
    api = client()
    with reporting():
        object_id = _object_id(api, kind, reference)
        found = api.get(f"/{_COLLECTIONS[kind]}/{object_id}/diff", **{"from": str(from_version), "to": str(to_version)})
    if out is Format.json:
        typer.echo(output.json_text(found))
        return
    output.rows(found["changes"], DIFF_COLUMNS, out, f"Versions {from_version} and {to_version} do not differ.")


def rollback(
    kind: Annotated[Restorable, typer.Argument(help="plan or exposition")],
    reference: Annotated[str, typer.Argument(metavar="ID", help="Its id or name.")],
    number: Annotated[int, typer.Argument(metavar="N", help="The version to go back to.")],
    out: OutputOption = Format.table,
) -> None:
    """Roll a plan or an exposition back to version N: applied as an update (with its checks), served by gateways
    within a second, and recorded as a new version."""
    api = client()
    with reporting():
        object_id = _object_id(api, kind, reference)
        restored = api.post(f"/{_COLLECTIONS[kind]}/{object_id}/versions/{number}/restore")
    if out is Format.json:
        typer.echo(output.json_text(restored))
        return
    version = restored["version"]
    name = version.get("object_name") or object_id
    typer.echo(f"Rolled {kind.value} {name} back to version {number} (now version {version['number']}).")
    output.rows(restored["changes"], DIFF_COLUMNS, out, f"Nothing differed: it was as version {number} already.")
    if restored.get("api_key"):
        typer.echo(f"New inbound API key (shown once): {restored['api_key']}")
