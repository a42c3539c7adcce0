"""`apimcp template`: an organization's presets of plan settings (inbound security, rate limits, header policy,
audit...), copied into a plan made with `apimcp plan create ... --template NAME`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from apimcp.cli import output
from apimcp.cli.common import EXIT_USAGE, client, fail, find, reporting
from apimcp.cli.output import Format, OutputOption

template_app = typer.Typer(help="Presets of plan settings that new plans start with (apimcp plan create --template).")

MAX_FILE_BYTES = 1_048_576
SettingsFile = Annotated[
    Path,
    typer.Option(
        "--file",
        "-f",
        help="A YAML or JSON file of plan settings: inbound_mode, oauth, introspection_secret_id, rate_limit, "
        "header_policy, audit, tasks, tool_search, code_mode, policies, guardrails, resilience, cache, "
        "backend_timeout_ms, output_schemas (or {settings: {...}}).",
    ),
]
Description = Annotated[str | None, typer.Option(help="What the template is for.")]


def _settings_of(path: Path) -> dict[str, Any]:
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
        value = load_yaml(content, name=str(path)) if content.strip() else {}
    except (yaml.YAMLError, ValueError) as exc:
        fail(f"{path}: {exc}", EXIT_USAGE)
    if isinstance(value, dict) and set(value) == {"settings"}:
        value = value["settings"]
    if not isinstance(value, dict):
        fail(f"{path}: plan settings are a mapping (inbound_mode: oauth, rate_limit: ...)", EXIT_USAGE)
    return value


def _show(template: dict[str, Any], out: Format, title: str) -> None:
    if out is Format.json:
        typer.echo(output.json_text(template))
        return
    output.record({k: v for k, v in template.items() if k != "settings"}, out, title=title)
    typer.echo("  settings:")
    for key, value in template["settings"].items():
        shown = output.json_text(value, indent=None) if isinstance(value, (dict, list)) else value
        typer.echo(f"    {key}: {shown}")
    if not template["settings"]:
        typer.echo("    (none: a plan made from it has the defaults)")


@template_app.command("list")
def list_templates(out: OutputOption = Format.table) -> None:
    """The organization's templates."""
    api = client()
    with reporting():
        found = api.get("/templates")
    columns: list[output.Column] = [
        ("NAME", "name"),
        ("SETTINGS", lambda t: ", ".join(t["settings"])),
        ("DESCRIPTION", lambda t: output.first_line(t["description"])),
        ("ID", "id"),
    ]
    output.rows(found, columns, out, "No templates.")


@template_app.command("show")
def show(template: Annotated[str, typer.Argument(help="id or name")], out: OutputOption = Format.table) -> None:
    """A template's settings, as plans made from it get them."""
    api = client()
    with reporting():
        found = find(api, "/templates", template, "template")
    _show(found, out, f"Template {found['name']} ({found['id']})")


@template_app.command("create")
def create(
    name: Annotated[str, typer.Argument(help="Unique in the organization.")],
    file: SettingsFile,
    description: Description = None,
    out: OutputOption = Format.table,
) -> None:
    """Create a template from a file of plan settings (checked as a plan's are)."""
    settings = _settings_of(file)
    api = client()
    with reporting():
        made = api.post("/templates", {"name": name, "description": description, "settings": settings})
    _show(made, out, f"Created template {made['name']} ({made['id']})")


@template_app.command("update")
def update(
    template: Annotated[str, typer.Argument(help="id or name")],
    file: Annotated[Path | None, typer.Option("--file", "-f", help="Settings replacing all of the template's.")] = None,
    name: Annotated[str | None, typer.Option(help="A new name.")] = None,
    description: Description = None,
    out: OutputOption = Format.table,
) -> None:
    """Rename a template, or replace its description or its settings; plans made from it do not change."""
    body: dict[str, Any] = {}
    if file is not None:
        body["settings"] = _settings_of(file)
    if name is not None:
        body["name"] = name
    if description is not None:
        body["description"] = description or None
    if not body:
        fail("give --file, --name or --description", EXIT_USAGE)
    api = client()
    with reporting():
        found = find(api, "/templates", template, "template")
        saved = api.patch(f"/templates/{found['id']}", body)
    _show(saved, out, f"Updated template {saved['name']} ({saved['id']})")


@template_app.command("delete")
def delete(template: Annotated[str, typer.Argument(help="id or name")]) -> None:
    """Delete a template; plans made from it keep their settings."""
    api = client()
    with reporting():
        found = find(api, "/templates", template, "template")
        api.delete(f"/templates/{found['id']}")
    typer.echo(f"Deleted template {found['name']}.")
