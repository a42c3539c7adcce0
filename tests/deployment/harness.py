"""A control plane with its gateway in one process (as `apimcp serve` runs them), and a REST client for it."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from apimcp.control.plane import ControlPlane
from apimcp.embedded import EmbeddedApp, embedded
from apimcp.protocol import EndpointOptions
from tests.gateway.echo_backend import create_app as echo_app
from tests.support.fetching import LOOPBACK_ALLOWED
from tests.support.live_aiohttp import live_aiohttp
from tests.support.live_server import live_app

ECHO_SPEC = Path(__file__).parent.parent / "gateway" / "echo_api.yaml"


class Api:
    """The control plane's REST API, failing loudly on unexpected statuses."""

    def __init__(self, base: str, token: str) -> None:
        self.base = base
        self.http = httpx2.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {token}"}, timeout=30)

    def call(self, method: str, path: str, expect: int = 200, **kwargs: Any) -> Any:
        response = self.http.request(method, path, **kwargs)
        assert response.status_code == expect, (response.status_code, response.text)
        return response.json() if response.content else None

    def import_echo(self, name: str = "echo", version: str = "2.1") -> dict[str, Any]:
        files = {"file": ("echo_api.yaml", ECHO_SPEC.read_bytes(), "application/yaml")}
        return dict(self.call("POST", "/services", 201, files=files, data={"name": name, "version": version}))

    def expose(self, service_id: str, backend: str, name: str, **plan: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        created = self.call(
            "POST", "/plans", 201, json={"name": name, "service_id": service_id, "backend_endpoint": backend, **plan}
        )
        exposition = self.call("POST", "/expositions", 201, json={"plan_id": created["id"], "name": name})
        return created, exposition


@dataclass
class Deployment:
    base: str
    api: Api
    backend: str
    app: EmbeddedApp
    plane: ControlPlane

    def served(self, path: str) -> bool:
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        return httpx2.post(self.base + path, json=ping).status_code != 404


def wait_until(condition: Callable[[], bool], seconds: float = 15.0) -> float:
    """How long `condition` took to hold (polling every 5 ms); fails after `seconds`, a guard against hanging far
    above what any change takes to arrive (a loaded machine makes it slower, not wrong)."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > seconds:
            raise AssertionError(f"not within {seconds} s")
        time.sleep(0.005)
    return time.monotonic() - start


@contextmanager
def deployment(data_dir: Path, database_url: str | None = None) -> Iterator[Deployment]:
    """Served until the block ends (SQLite in `data_dir` unless `database_url` names another database)."""
    apps: list[EmbeddedApp] = []
    planes: list[ControlPlane] = []

    @asynccontextmanager
    async def make() -> AsyncIterator[EmbeddedApp]:
        # The tests' description servers listen on loopback, which the default fetch policy refuses.
        async with embedded(
            data_dir, database_url=database_url, options=EndpointOptions(), fetch_policy=LOOPBACK_ALLOWED
        ) as started:
            apps.append(started.app)
            planes.append(started.plane)
            yield started.app

    with live_aiohttp(echo_app) as backend, live_app(make) as base:
        token = (data_dir / "bootstrap-token").read_text().strip()
        api = Api(base, token)
        try:
            yield Deployment(base, api, f"{backend}/v1", apps[0], planes[0])
        finally:
            api.http.close()
