"""`apimcp export DIR`: the logged-in organization as a gateway configuration `apimcp apply` takes.

Writes `DIR/apimcp.yaml` and, under `DIR/services/`, the services' descriptions and artifacts it refers to
(`apimcp.cli.export_document`). Secret values are never exported: the file names environment variables for them,
listed on standard error, and says nothing of what it cannot hold but the notes printed there too. Nothing is
written outside DIR, and a DIR that holds anything is refused unless `--force` is given.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Annotated

import typer

from apimcp.cli.common import EXIT_USAGE, client, fail, reporting
from apimcp.cli.export_document import CONFIG_FILE, Export, build_export


def _check(directory: Path, force: bool) -> None:
    if directory.exists() and not directory.is_dir():
        fail(f"{directory} is not a folder", EXIT_USAGE)
    if directory.is_dir() and any(directory.iterdir()) and not force:
        fail(f"{directory} is not empty: export into a new or empty folder, or give --force to write over it",
             EXIT_USAGE)  # fmt: skip


def _write(root: Path, relative: str, content: bytes) -> None:
    """One file inside `root`, never through a link (a forced export into a folder someone prepared)."""
    parts = relative.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"{relative!r} is not a path inside the export")
    folder = root
    for part in parts[:-1]:  # made one at a time: a link among them is refused before anything is made through it
        folder = folder / part
        if folder.is_symlink() or not folder.resolve().is_relative_to(root):
            fail(f"{folder} is a link (it may lead outside {root}); nothing more is written")
        try:
            folder.mkdir(exist_ok=True)
        except OSError as exc:  # a file where a folder goes, say
            fail(f"{folder}: cannot make the folder: {exc.strerror}")
    target = folder / parts[-1]
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(target, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            fail(f"{target} is a link; nothing is written through links")
        fail(f"cannot write {target}: {exc.strerror}")
    with os.fdopen(descriptor, "wb") as file:
        file.write(content)


def _report(directory: Path, exported: Export) -> None:
    for note in exported.notes:
        typer.echo(f"note: {note}", err=True)
    if exported.variables:
        typer.echo(f"Set these environment variables before `apimcp apply {directory / CONFIG_FILE}`:", err=True)
        for variable in exported.variables:
            typer.echo(f"  {variable.name}  ({variable.value} of secret {variable.secret!r})", err=True)


def export(
    directory: Annotated[Path, typer.Argument(help="The folder to write apimcp.yaml and its files into.")],
    force: Annotated[bool, typer.Option("--force", help="Write into a folder that is not empty.")] = False,
) -> None:
    """Write the organization's services, plans, expositions, policies and templates as a configuration
    `apimcp apply` takes (secret values are named by environment variables, never written)."""
    _check(directory, force)
    api = client()
    with reporting():
        data = api.get("/export")
    exported = build_export(data)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"{directory}: cannot make the folder: {exc.strerror}")
    root = directory.resolve()
    for relative, content in exported.files.items():
        _write(root, relative, content)
    _report(directory, exported)
    services = len(data["services"])
    typer.echo(f"Exported {len(exported.files) - 1} files and {CONFIG_FILE} ({services} services) to {directory}")
