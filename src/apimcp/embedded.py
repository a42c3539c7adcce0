"""`apimcp serve`: the control plane and a gateway in one process, on one port.

`/api/...` is the control plane's REST API; everything else is the gateway.
The gateway follows the store through the same sync loop a separate gateway
uses, with a source that reads the database in-process and wakes on commits,
so a change is served as soon as its transaction ends. Its snapshots are sealed
like a separate gateway's, to a key made at start that never leaves memory: one
snapshot format, one way to open it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from apimcp import __version__
from apimcp.backends.rest import close_session, new_session
from apimcp.control import changes, snapshot
from apimcp.control.api.app import create_api
from apimcp.control.domain import approvals, audit, deliveries, gateways, traffic
from apimcp.control.errors import DomainError
from apimcp.control.models import Organization, Service
from apimcp.control.plane import ControlPlane
from apimcp.control.setup import bootstrap, open_plane
from apimcp.control.upstream_refresh import keep_refreshing, reread_soon
from apimcp.gateway.app import GatewayApp
from apimcp.gateway.runtime import GatewayRuntime
from apimcp.gateway.sync import SnapshotSource, following
from apimcp.policies.admin_approval import AdminUnavailable
from apimcp.protocol import EndpointOptions
from apimcp.protocol.exchange import Receive, Scope, Send
from apimcp.safety.addresses import AddressPolicy
from apimcp.sealing.keys import GatewayKey, GatewayPublicKey
from apimcp.servers.factory import AsgiApp, server_for
from apimcp.servers.tls import ServerTls
from apimcp.settings import Settings
from apimcp.state import GatewayState

log = logging.getLogger("apimcp.embedded")

EMBEDDED_GATEWAY = "embedded"


class LocalSource(SnapshotSource):
    """The control plane of this process: every organization, read straight from the store, sealed to `key`."""

    def __init__(self, plane: ControlPlane, key: GatewayPublicKey) -> None:
        self._plane = plane
        self._key = key

    async def fetch(self, known_services: list[str]) -> Mapping[str, Any]:
        return await asyncio.to_thread(self._build, known_services)

    def _build(self, known_services: list[str]) -> Mapping[str, Any]:
        with self._plane.session() as session:
            for organization in session.scalars(select(Organization)):
                gateways.register(session, organization.id, EMBEDDED_GATEWAY, {}, version=__version__, counted=False)
            return snapshot.build(
                session,
                self._plane.keys,
                organization_id=None,
                labels={},
                recipient=self._key,
                known_services=known_services,
            )

    async def wait_for_change(self, revision: int) -> None:
        signal = self._plane.signal
        while True:
            seen = signal.generation
            if await asyncio.to_thread(self._latest) > revision:
                return
            await signal.wait(changes.POLL_SECONDS, seen)

    def _latest(self) -> int:
        with self._plane.session() as session:
            return changes.latest(session)

    async def report_audit(self, events: list[dict[str, Any]], report: str) -> None:
        await asyncio.to_thread(self._record, events, report)

    async def report_upstreams(self, states: Mapping[str, str]) -> None:
        await asyncio.to_thread(self._report_upstreams, states)

    def _report_upstreams(self, states: Mapping[str, str]) -> None:
        with self._plane.session() as session:  # this gateway serves every organization: each keeps its own
            found = session.execute(select(Service.id, Service.organization_id).where(Service.id.in_(list(states))))
            owners: dict[str, str] = dict(found.all())
            for organization in session.scalars(select(Organization)):
                own = {service: state for service, state in states.items() if owners.get(service) == organization.id}
                gateways.report_upstreams(session, organization.id, EMBEDDED_GATEWAY, own)

    async def report_traffic(self, revision: int, rows: list[dict[str, Any]], report: str) -> None:
        await asyncio.to_thread(self._record_traffic, revision, rows, report)

    def _record_traffic(self, revision: int, rows: list[dict[str, Any]], report: str) -> None:
        with self._plane.session() as session:  # this gateway serves every organization: each keeps its own
            if deliveries.first_delivery(session, report):  # a thread its caller gave up on may have kept it
                traffic.record(session, None, EMBEDDED_GATEWAY, revision, rows)

    async def report_upstream_changed(self, service_id: str) -> None:
        reread_soon(self._plane, None, service_id)

    def _record(self, events: list[dict[str, Any]], report: str) -> None:
        with self._plane.session() as session:
            if deliveries.first_delivery(session, report):
                audit.record(session, None, events)

    async def request_approval(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        try:
            return await asyncio.to_thread(self._submit_approval, request)
        except DomainError as exc:  # what the HTTP route would answer as a problem
            raise AdminUnavailable(f"the control plane refused it: {exc}") from exc
        except Exception as exc:  # what the HTTP route would answer as a 500: logged, never shown to the caller
            log.exception("an approval request could not be submitted")
            raise AdminUnavailable("the control plane failed to answer") from exc

    def _submit_approval(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        with self._plane.session() as session:  # this gateway serves every organization: the exposition's decides
            return approvals.submit(session, None, request)


CONTROL_PLANE_PATHS = ("/api/", "/console/")
"""What the control plane serves (the REST API, the web console); the rest is the gateway's."""


class EmbeddedApp:
    """`/api` and `/console` to the control plane, the rest to the gateway."""

    def __init__(self, api: AsgiApp, gateway: GatewayApp) -> None:
        self.api = api
        self.gateway = gateway

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and (path in ("/api", "/console") or path.startswith(CONTROL_PLANE_PATHS)):
            await self.api(scope, receive, send)  # type: ignore[misc]
        else:
            await self.gateway(scope, receive, send)


@dataclass(frozen=True, slots=True)
class Started:
    app: EmbeddedApp
    plane: ControlPlane
    data_dir: Path
    bootstrap_token: str | None
    bootstrap_file: Path | None


@asynccontextmanager
async def embedded(
    data_dir: Path,
    *,
    database_url: str | None,
    options: EndpointOptions,
    prepare: Callable[[ControlPlane], None] | None = None,
    fetch_policy: AddressPolicy | None = None,
    settings: Settings | None = None,
    public_url: str | None = None,
    state: GatewayState | None = None,
) -> AsyncIterator[Started]:
    """The control plane opened and its gateway following it, in the running loop, until the block ends.

    `prepare` runs on the control plane before the gateway's first snapshot (the demo seeds it).
    `fetch_policy` says which addresses imports by URL and token endpoints may reach (default: public ones);
    `settings` bound the control plane's requests, imports and fetches (default: the defaults).
    """
    limits = settings or Settings()
    plane = await asyncio.to_thread(
        open_plane,
        data_dir,
        database_url,
        limits.api,
        fetch_policy=fetch_policy,
        fetch_limits=limits.fetch,
        yaml_limits=limits.yaml,
        schema_limits=limits.schema,
        import_capacity=limits.imports,
    )
    first = await asyncio.to_thread(bootstrap, plane, data_dir)
    if prepare is not None:
        await asyncio.to_thread(prepare, plane)
    refreshing = asyncio.get_running_loop().create_task(keep_refreshing(plane, limits.upstreams))
    session = new_session()
    key = GatewayKey.generate()  # in memory only: this process's gateway is the only one that reads its snapshots
    runtime = GatewayRuntime(
        session,
        options,
        key=key,
        fetch_policy=fetch_policy,
        script_limits=limits.scripts,
        code_limits=limits.code_mode,
        filter_limits=limits.filters,
        shaping_limits=limits.shaping,
        public_url=public_url,
        state=state,
    )
    try:
        async with following(runtime, LocalSource(plane, key.public)) as sync:
            await asyncio.wait_for(sync.first_applied.wait(), 60)
            token, file = first if first is not None else (None, None)
            yield Started(EmbeddedApp(create_api(plane), GatewayApp(runtime)), plane, data_dir, token, file)
    finally:
        refreshing.cancel()
        await close_session(session)
        plane.imports.shutdown()
        plane.store.dispose()


async def serve_embedded(
    data_dir: Path,
    *,
    database_url: str | None,
    options: EndpointOptions,
    host: str,
    port: int,
    log_level: str = "info",
    prepare: Callable[[ControlPlane], None] | None = None,
    on_ready: Callable[[Started], Awaitable[None] | None] | None = None,
    tls: ServerTls | None = None,
    fetch_policy: AddressPolicy | None = None,
    settings: Settings | None = None,
    public_url: str | None = None,
    state: GatewayState | None = None,
) -> None:
    """Open the control plane, serve it with its gateway until interrupted; `on_ready` once it accepts connections."""
    limits = settings or Settings()
    async with embedded(
        data_dir,
        database_url=database_url,
        options=options,
        prepare=prepare,
        fetch_policy=fetch_policy,
        settings=limits,
        public_url=public_url,
        state=state,
    ) as started:

        def stopping() -> None:
            started.plane.signal.close()  # ends the REST API's long polls
            started.app.gateway.shutdown()  # ends MCP streams

        server = server_for(
            started.app,
            stopping,
            host=host,
            port=port,
            log_level=log_level,
            tls=tls,
            head_limits=limits.head,
            forwarded=limits.forwarded,
            on_listening=(lambda: on_ready(started)) if on_ready is not None else None,
        )
        await server.serve()
