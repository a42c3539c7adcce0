"""`apimcp gateway-key`: the key pairs gateways hold; snapshot secrets are sealed to their public halves.

The pair is made here, on the admin's machine: the private half goes to a file
only its owner can read (for the gateway's --key-file) and never to the control
plane, which keeps the public half.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated

import typer

from apimcp.cli import output
from apimcp.cli.common import EXIT_USAGE, client, fail, find, reporting
from apimcp.cli.output import Format, OutputOption
from apimcp.sealing.keys import GatewayKey

gateway_key_app = typer.Typer(
    help="Gateway keys: snapshots' secrets are sealed to them (admin token needed to create or revoke).",
    no_args_is_help=True,
)

KEY_COLUMNS: list[output.Column] = [
    ("ID", "id"),
    ("NAME", "name"),
    ("FINGERPRINT", "fingerprint"),
    ("CREATED", "created_at"),
    ("REVOKED", "revoked_at"),
]


@gateway_key_app.command("create")
def create_gateway_key(
    name: Annotated[str, typer.Argument(help="What the key is for, e.g. the gateways of one site.")],
    out_file: Annotated[
        Path | None, typer.Option("--out", help="Where to write the private key (default: ./NAME.pem); never replaced.")
    ] = None,
    out: OutputOption = Format.table,
) -> None:
    """Make a key pair, register its public half, write its private half to a file only you can read."""
    api = client()
    path = out_file or Path(f"{name}.pem")
    key = GatewayKey.generate()
    try:
        key.write(path)
    except FileExistsError:
        fail(f"{path} exists; give another --out (a key file is never replaced)", EXIT_USAGE)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror}", EXIT_USAGE)
    try:
        with reporting():
            registered = api.post("/gateway-keys", {"name": name, "public_key": key.public.text})
    except typer.Exit:
        with contextlib.suppress(OSError):
            path.unlink()  # not registered: the file would only be a key that opens nothing
        raise
    output.record(registered, out, title=f"Registered gateway key {registered['name']} ({registered['id']})")
    if out is Format.table:
        typer.echo(f"Private key written to {path} (mode 0600): start gateways with --key-file {path}")


@gateway_key_app.command("list")
def list_gateway_keys(out: OutputOption = Format.table) -> None:
    """The organization's gateway keys (public halves and fingerprints)."""
    api = client()
    with reporting():
        output.rows(api.get("/gateway-keys"), KEY_COLUMNS, out, "No gateway key: `apimcp gateway-key create NAME`.")


@gateway_key_app.command("revoke")
def revoke_gateway_key(key: Annotated[str, typer.Argument(help="id or name")]) -> None:
    """Revoke a key at once: gateways holding it get no new snapshot."""
    api = client()
    with reporting():
        found = find(api, "/gateway-keys", key, "gateway key", lambda k: k["name"] == key and k["revoked_at"] is None)
        api.delete(f"/gateway-keys/{found['id']}")
    typer.echo(f"Revoked gateway key {found['name']} ({found['fingerprint']})")
