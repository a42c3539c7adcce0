"""`apimcp demo`: `apimcp serve` with the bundled Bookshelf REST API started on loopback and exposed.

The demo's artifacts (`demo_api/artifacts/`: two prompts, resources, two custom tools, output filters)
are attached too, so a newcomer sees every kind at work.

Everything a newcomer sees is the real path: the description imported into the
control plane, a plan and an exposition, the gateway following them, a backend
called over HTTP, tools served to MCP clients of every revision. The CLI works
against it as against any control plane (`apimcp plan update demo --exclude 'DELETE *'`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from apimcp.control.domain import expositions, orgs, plans, services
from apimcp.control.plane import ControlPlane
from apimcp.demo_api import spec_path, start
from apimcp.embedded import Started, serve_embedded
from apimcp.protocol import EndpointOptions
from apimcp.safety.addresses import AddressPolicy
from apimcp.settings import Settings

EXPOSITION = "bookshelf"
PLAN = "demo"
CACHE = {"tools/list": {"ttl_ms": 60_000, "scope": "public"}}
ARTIFACTS = ("prompts.yaml", "resources.yaml", "custom-tools.yaml", "output-filters.yaml")
"""In attachment order: filters may name the custom tools attached before them."""


def seed(plane: ControlPlane, backend_url: str) -> None:
    """Import the Bookshelf description and expose it at /mcp/default/bookshelf, calling `backend_url`.

    Run at every start: the service is refreshed, the plan follows the backend's new port, and
    whatever else the user changed in the plan is kept.
    """
    with plane.session() as session:
        organization = orgs.by_name(session, orgs.DEFAULT)
        imported = services.import_service(
            session,
            organization.id,
            content=spec_path().read_bytes(),
            filename="bookshelf.yaml",
            options=services.ImportOptions(name=EXPOSITION),
        )
        for name in ARTIFACTS:
            content = (spec_path().parent / "artifacts" / name).read_bytes()
            services.attach(session, organization.id, imported.service.id, name, content)
        existing = [p for p in plans.listed(session, organization.id, imported.service.id) if p.name == PLAN]
        if existing:
            plan, _ = plans.update(session, organization.id, existing[0].id, {"backend_endpoint": backend_url})
        else:
            plan, _ = plans.create(
                session, organization.id, imported.service.id, PLAN, {"backend_endpoint": backend_url, "cache": CACHE}
            )
        named = [e for e in expositions.listed(session, organization.id) if e.name == EXPOSITION]
        if not named:
            expositions.create(session, organization.id, plan.id, name=EXPOSITION)
        elif named[0].plan_id != plan.id:
            expositions.update(session, organization.id, named[0].id, {"plan_id": plan.id})


async def run_demo(
    data_dir: Path,
    *,
    host: str,
    port: int,
    on_ready: Callable[[Started, str], Awaitable[None] | None] | None = None,
    options: EndpointOptions | None = None,
    settings: Settings | None = None,
    fetch_policy: AddressPolicy | None = None,
) -> None:
    """Start the demo API on a free loopback port, then serve the control plane and gateway until interrupted
    (imports by URL and token endpoints reach what `fetch_policy` allows, as under `apimcp serve`)."""
    runner, api_port = await start("127.0.0.1", 0)
    backend_url = f"http://127.0.0.1:{api_port}"
    try:

        def ready(started: Started) -> Awaitable[None] | None:
            return on_ready(started, backend_url) if on_ready is not None else None

        await serve_embedded(
            data_dir,
            database_url=None,
            options=options or EndpointOptions(),
            host=host,
            port=port,
            prepare=lambda plane: seed(plane, backend_url),
            on_ready=ready,
            settings=settings,
            fetch_policy=fetch_policy,
        )
    finally:
        await runner.cleanup()
