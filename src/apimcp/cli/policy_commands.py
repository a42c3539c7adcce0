"""`apimcp policy`: a plan's rules (and its organization's) set from a file, shown, and tried on a call that is
never made (`policy test`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from apimcp.cli import output
from apimcp.cli.common import EXIT_USAGE, client, fail, find, pairs, reporting
from apimcp.cli.output import Format, OutputOption

policy_app = typer.Typer(help="Rules in CEL on who calls what with which arguments (docs/governance.md).")

MAX_FILE_BYTES = 1_048_576


def _rules_of(path: Path) -> Any:
    """The rules a YAML or JSON file holds: a list, or `{policies: [...]}`."""
    import yaml  # noqa: PLC0415

    from apimcp.safety.yaml_loading import load_yaml  # noqa: PLC0415

    try:
        with path.open("rb") as handle:
            content = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        fail(f"{path}: {exc.strerror}", EXIT_USAGE)
    if len(content) > MAX_FILE_BYTES:
        fail(f"{path} is larger than {MAX_FILE_BYTES} bytes", EXIT_USAGE)
    try:
        value = load_yaml(content, name=str(path))
    except (yaml.YAMLError, ValueError) as exc:
        fail(f"{path}: {exc}", EXIT_USAGE)
    if isinstance(value, dict) and set(value) == {"policies"}:
        value = value["policies"]
    return value


def _argument(text: str) -> Any:
    """`--arg bookId=3` gives 3, `--arg name=Ada` "Ada": a value is JSON when it reads as JSON, else a string."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


@policy_app.command("set")
def set_rules(
    rules: Annotated[Path, typer.Argument(help="A YAML or JSON file: a list of rules (or {policies: [...]})")],
    plan: Annotated[str | None, typer.Option(help="The plan (id or name) whose rules these become")] = None,
    organization: Annotated[bool, typer.Option("--organization", help="The organization's rules (admin)")] = False,
) -> None:
    """Replace a plan's rules, or the organization's (applied to every plan before its own)."""
    if (plan is None) == (not organization):
        fail("name a --plan, or say --organization", EXIT_USAGE)
    raw = _rules_of(rules)
    api = client()
    with reporting():
        if organization:
            api.put("/organization/policies", {"policies": raw})
            typer.echo("The organization's rules are replaced.")
            return
        assert plan is not None
        found = find(api, "/plans", plan, "plan")
        api.patch(f"/plans/{found['id']}", {"policies": raw})
    typer.echo(f"The rules of plan {found['name']} are replaced.")


@policy_app.command("show")
def show(
    plan: Annotated[str, typer.Argument(help="id or name")],
    out: OutputOption = Format.table,
) -> None:
    """The organization's rules, then the plan's, in the order they are read."""
    api = client()
    with reporting():
        found = find(api, "/plans", plan, "plan")
        shown = api.get(f"/plans/{found['id']}")
        organization = api.get("/organization")
    rows = [{**rule, "from": "organization"} for rule in organization.get("policies") or []]
    rows += [{**rule, "from": "plan"} for rule in shown.get("policies") or []]
    columns: list[output.Column] = [("FROM", "from"), ("NAME", "name"), ("EFFECT", "effect"), ("WHEN", "when")]
    output.rows(rows, columns, out, "No rules: every call is allowed.")


@policy_app.command("test")
def try_call(
    plan: Annotated[str, typer.Argument(help="id or name")],
    call: Annotated[str, typer.Option("--call", help="The tool called")],
    arg: Annotated[list[str] | None, typer.Option("--arg", help="An argument, k=v (v read as JSON if it is)")] = None,
    claims: Annotated[str | None, typer.Option(help="The token's claims as JSON (none: an anonymous caller)")] = None,
    client_address: Annotated[str | None, typer.Option("--client", help="The caller's address")] = None,
    revision: Annotated[str, typer.Option(help="The MCP revision the call speaks")] = "2025-11-25",
    out: OutputOption = Format.table,
) -> None:
    """What the rules would do with a call, and which rule decided; nothing is called."""
    arguments = {key: _argument(value) for key, value in pairs(arg or [], "--arg").items()}
    token_claims = None
    if claims is not None:
        try:
            token_claims = orjson.loads(claims)
        except orjson.JSONDecodeError as exc:
            fail(f"--claims is not JSON: {exc}", EXIT_USAGE)
        if not isinstance(token_claims, dict):
            fail("--claims is a JSON object", EXIT_USAGE)
    api = client()
    with reporting():
        found = find(api, "/plans", plan, "plan")
        body = {"tool": call, "arguments": arguments, "claims": token_claims, "client": client_address,
                "revision": revision}  # fmt: skip
        answer = api.post(f"/plans/{found['id']}/policy-test", body)
    if out is Format.json:
        typer.echo(output.json_text(answer))
        return
    decided = f"by rule {answer['rule']!r}" if answer["rule"] else "no rule held: allowed by default"
    typer.echo(f"{answer['decision'].upper()} {decided}")
    if answer["message"]:
        typer.echo(f"  the caller is told: {answer['message']}")
    if answer["redact"]:
        typer.echo(f"  redacted: {', '.join(answer['redact'])} (by {', '.join(answer['redacted_by'])})")
    for error in answer["errors"]:
        typer.echo(f"  rule {error['rule']!r} could not be evaluated: {error['error']}")
    typer.echo(f"  listed for this caller: {'yes' if answer['listed'] else 'no'}")
