"""`apimcp demo`: `apimcp serve` with the bundled Bookshelf REST API started on loopback and exposed.

The demo's artifacts (`demo_api/artifacts/`: two prompts, resources, two custom tools, output filters)
are attached too, so a newcomer sees every kind at work.

Everything a newcomer sees is the real path: the description imported into the
control plane, a plan and an exposition, the gateway following them, a backend
called over HTTP, tools served to MCP clients of every revision. The CLI works
against it as against any control plane (`apimcp plan update demo --exclude 'DELETE *'`).

The Bookshelf API listens on a new port at every start; the data directory records the
last one (`demo-backend`), and every plan that called it follows the new one. So does
`apimcp serve` on the same data: it starts a Bookshelf API of its own for those plans
rather than serve them a dead port.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from apimcp.control.domain import expositions, orgs, plans, services
from apimcp.control.errors import NotFound
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


BACKEND_RECORD = "demo-backend"
"""In the data directory: the URL of the Bookshelf API the demo's plans call."""


def recorded_backend(data_dir: Path) -> str | None:
    """The Bookshelf API the demo's plans called at its last start in `data_dir`, if it ever ran there."""
    with contextlib.suppress(OSError):
        return (data_dir / BACKEND_RECORD).read_text().strip() or None
    return None


@asynccontextmanager
async def bookshelf_api() -> AsyncIterator[str]:
    """The Bookshelf API on a free loopback port (its URL) until the block ends."""
    runner, api_port = await start("127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{api_port}"
    finally:
        await runner.cleanup()


def record_backend(data_dir: Path, backend_url: str | None) -> None:
    """Remember the Bookshelf API the demo's plans call now (None: none does any more)."""
    if backend_url is None:
        (data_dir / BACKEND_RECORD).unlink(missing_ok=True)
        return
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / BACKEND_RECORD).write_text(backend_url + "\n")


def follow(plane: ControlPlane, previous: str | None, backend_url: str) -> list[str]:
    """Point every plan of the default organization that called the demo's `previous` Bookshelf API (the demo's
    plan, or a duplicate of it) at `backend_url`; their names. A plan pointed elsewhere since is left alone."""
    if previous is None or previous == backend_url:
        return []
    with plane.session() as session:
        try:
            organization = orgs.by_name(session, orgs.DEFAULT)
        except NotFound:  # deleted since: nothing of the demo is left
            return []
        moved = [plan for plan in plans.listed(session, organization.id) if plan.backend_endpoint == previous]
        for plan in moved:
            plans.update(session, organization.id, plan.id, {"backend_endpoint": backend_url})
        return [plan.name for plan in moved]


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
    async with bookshelf_api() as backend_url:

        def prepare(plane: ControlPlane) -> None:
            follow(plane, recorded_backend(data_dir), backend_url)  # duplicates of the demo's plan too
            seed(plane, backend_url)
            record_backend(data_dir, backend_url)

        def ready(started: Started) -> Awaitable[None] | None:
            return on_ready(started, backend_url) if on_ready is not None else None

        await serve_embedded(
            data_dir,
            database_url=None,
            options=options or EndpointOptions(),
            host=host,
            port=port,
            prepare=prepare,
            on_ready=ready,
            settings=settings,
            fetch_policy=fetch_policy,
        )
