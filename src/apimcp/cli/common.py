"""What every control-plane command shares: the client, failing clearly, finding objects by name."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer

from apimcp.cli import context
from apimcp.cli.client import ApiError, ControlPlaneClient
from apimcp.safety.plain_http import refusal

EXIT_USAGE = 2
EXIT_FAILED = 1


def fail(message: str, code: int = EXIT_FAILED) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=code)


def client() -> ControlPlaneClient:
    try:
        current = context.load()
    except ValueError as exc:
        fail(str(exc))
    if current is None:
        fail(
            "not logged in: run `apimcp login <url>` (or set APIMCP_URL and APIMCP_TOKEN); "
            "`apimcp serve` prints how on its first start"
        )
    problem = refusal(current.url, allow_http=current.allow_http, option=f"{context.ALLOW_HTTP_VARIABLE}=1")
    if problem is not None:
        fail(problem)
    try:
        return ControlPlaneClient(
            current.url, current.token, ca_file=current.ca_file, organization=current.organization
        )
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        fail(f"cannot use the CA file {current.ca_file}: {exc}")


@contextmanager
def reporting() -> Iterator[None]:
    """Turn control plane errors into one clear line and a non-zero exit."""
    try:
        yield
    except ApiError as exc:
        where = f" ({exc.field})" if exc.field and exc.field not in str(exc) else ""
        fail(f"{exc}{where}")


def pairs(values: list[str], option: str) -> dict[str, str]:
    """`["a=1", "b=2"]` as a mapping; anything else is a usage error naming the option."""
    result = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail(f"{option} expects NAME=VALUE, got {item!r}", EXIT_USAGE)
        result[key] = value
    return result


def find(
    api: ControlPlaneClient,
    collection: str,
    reference: str,
    what: str,
    matches: Callable[[dict[str, Any]], bool] | None = None,
) -> dict[str, Any]:
    """The object of `collection` whose id is `reference`, else the only one whose name is."""
    items: list[dict[str, Any]] = api.get(collection)
    for item in items:
        if item["id"] == reference:
            return item
    test = matches or (lambda item: item.get("name") == reference)
    found = [item for item in items if test(item)]
    if len(found) == 1:
        return found[0]
    if not found:
        fail(f"no {what} {reference!r} (give its id or name; `apimcp {what.replace(' ', '-')} list` shows them)")
    ids = ", ".join(item["id"] for item in found)
    fail(f"{len(found)} {what}s are named {reference!r}; give one of their ids: {ids}")


def find_service(api: ControlPlaneClient, reference: str) -> dict[str, Any]:
    """A service by id, `name`, or `name:version`."""
    name, sep, version = reference.rpartition(":")
    if sep:
        return find(
            api,
            "/services",
            reference,
            "service",
            lambda s: (s["name"] == name and s["version"] == version) or s["name"] == reference,
        )
    return find(api, "/services", reference, "service")
