"""MCP servers read again periodically, so that what they change is held for an admin without anyone asking.

Every `UpstreamRefresh.every_seconds` (0: never), the control plane imports each MCP service again from the URL
it was imported from, on its import workers (a round is skipped when they are all busy): what a server changed
is held, not served (`domain/upstream_changes.py`). A server that cannot be read (down, or asking credentials the
stored URL does not carry: a secret given at import is not kept) is logged and skipped; the next round tries
again. Several control-plane replicas may each refresh: holding the same changes twice holds them once.

A gateway that hears a server say its list changed asks for that service to be read again at once
(`reread_soon`): at most once a minute per service and control plane, on the import workers too.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from sqlalchemy import ColumnElement, select

from apimcp.control.domain import services
from apimcp.control.errors import DomainError
from apimcp.control.import_pool import ImportsBusy
from apimcp.control.limits import UpstreamRefresh
from apimcp.control.models import Artifact, Service
from apimcp.control.plane import ControlPlane

log = logging.getLogger("apimcp.control")


@dataclass(frozen=True, slots=True)
class Refreshed:
    read: int = 0
    holding: int = 0
    """Services holding changes after this round (held now or before)."""
    failed: int = 0


def refresh_all(plane: ControlPlane) -> Refreshed:
    """Read every MCP service of every organization again."""
    return _refresh(plane, Service.kind == "mcp")


def refresh_one(plane: ControlPlane, organization_id: str | None, service_id: str) -> Refreshed:
    """Read one MCP service's server again (of `organization_id`; None: any organization's)."""
    chosen = (Service.kind == "mcp") & (Service.id == service_id)
    if organization_id is not None:
        chosen &= Service.organization_id == organization_id
    return _refresh(plane, chosen)


def _refresh(plane: ControlPlane, chosen: ColumnElement[bool]) -> Refreshed:
    with plane.session() as session:
        found = session.execute(
            select(Service.organization_id, Service.name, Service.version, Artifact.source)
            .join(Artifact, Artifact.service_id == Service.id)
            .where(chosen, Artifact.role == "main")
        ).all()
    read = holding = failed = 0
    for organization, name, version, source in found:
        if not source:
            continue
        options = services.ImportOptions(kind="mcp", name=name, version=version)
        try:
            with plane.session() as session:
                imported = services.import_service(
                    session,
                    organization,
                    url=source,
                    options=options,
                    fetcher=plane.fetcher,
                    yaml_limits=plane.yaml_limits,
                    schema_limits=plane.schema_limits,
                )
                held = imported.service.held_changes
        except DomainError as exc:
            failed += 1
            log.warning("MCP service %s %s could not be read again: %s", name, version, exc)
            continue
        read += 1
        holding += held > 0
    return Refreshed(read, holding, failed)


async def keep_refreshing(plane: ControlPlane, refresh: UpstreamRefresh) -> None:
    """Refresh every `refresh.every_seconds` until cancelled."""
    if not refresh.every_seconds:
        return
    while True:
        await asyncio.sleep(refresh.every_seconds)
        try:
            done = await plane.imports.run(lambda: refresh_all(plane))
        except ImportsBusy:
            continue  # imports people asked for come first
        except Exception:  # a round that fails must not end the loop
            log.exception("MCP services could not be read again")
            continue
        if done.read or done.failed:
            log.info("MCP services read again: %d read, %d holding changes, %d failed", *_figures(done))


def _figures(done: Refreshed) -> tuple[int, int, int]:
    return done.read, done.holding, done.failed


REREAD_QUIET_SECONDS = 60.0


def reread_soon(plane: ControlPlane, organization_id: str | None, service_id: str) -> bool:
    """Read the service's server again in the background, unless it was asked less than a minute ago (False)."""
    rereads = plane.rereads
    asked = f"{organization_id or ''}:{service_id}"  # one organization's gateway takes no other's turn
    if not rereads.due(asked, REREAD_QUIET_SECONDS):
        return False

    async def reread() -> None:
        try:
            done = await plane.imports.run(lambda: refresh_one(plane, organization_id, service_id))
        except ImportsBusy:
            rereads.forget(asked)  # asked again by the next gateway that hears it
            return
        except Exception:
            log.exception("MCP service %s could not be read again", service_id)
            return
        if done.read:
            log.info("MCP service %s read again, as a gateway heard it changed: %d holding changes", service_id,
                     done.holding)  # fmt: skip

    rereads.track(asyncio.get_running_loop().create_task(reread()))
    return True
