"""Helpers for the REST API tests: organizations with their tokens, clients, and problem checks."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from apimcp.control.domain import gateway_keys, orgs, tokens
from apimcp.control.plane import ControlPlane
from apimcp.sealing.keys import GatewayKey
from apimcp.sealing.snapshots import open_exposition

ECHO_API = Path(__file__).parent.parent / "gateway" / "echo_api.yaml"
PROBLEM = "application/problem+json"


@dataclass
class Org:
    """An organization, an API client (with an admin token) and a gateway client holding a registered gateway key."""

    id: str
    name: str
    user_token: str
    """An admin token: the REST API's caller in most tests (`member` makes a user-role client)."""
    gateway_token: str
    user: httpx2.Client
    gateway: httpx2.Client
    gateway_key: GatewayKey

    def snapshot_response(self, name: str = "gw", **registration: Any) -> httpx2.Response:
        body = {"name": name, "public_key": self.gateway_key.public.text, **registration}
        return self.gateway.post("/gateway/snapshot", json=body)

    def snapshot(self, name: str = "gw", **registration: Any) -> dict[str, Any]:
        """The gateway's snapshot, its sealed secrets opened with the gateway's key."""
        response = self.snapshot_response(name, **registration)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        body["expositions"] = [open_exposition(e, self.gateway_key) for e in body["expositions"]]
        return body


@dataclass
class Api:
    """A live control-plane API and the organizations a test made on it."""

    plane: ControlPlane
    base: str
    clients: list[httpx2.Client] = field(default_factory=list)

    def client(self, token: str | None = None) -> httpx2.Client:
        # a connection per request: on loopback, keep-alive meets delayed ACKs and costs ~40 ms a request
        headers = {"Connection": "close"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        client = httpx2.Client(base_url=f"{self.base}/api/v1", headers=headers, timeout=30)
        self.clients.append(client)
        return client

    def org(self, name: str) -> Org:
        key = GatewayKey.generate()
        with self.plane.session() as session:
            organization = orgs.create(session, name)
            admin, user_token = tokens.issue(session, organization.id, "tester", tokens.ADMIN)
            _, gateway_token = tokens.issue(session, organization.id, "edge", tokens.GATEWAY)
            caller = tokens.Caller(organization.id, name, admin.id, tokens.ADMIN)
            gateway_keys.register(session, caller, "edge-key", key.public.text)
            organization_id = organization.id
        return Org(
            organization_id,
            name,
            user_token,
            gateway_token,
            self.client(user_token),
            self.client(gateway_token),
            key,
        )

    def member(self, org: Org, name: str = "member") -> httpx2.Client:
        """A client with a user-role token of `org` (issued by its admin)."""
        issued = org.user.post("/tokens", json={"name": name, "kind": "user"})
        assert issued.status_code == 201, issued.text
        return self.client(issued.json()["token"])

    def close(self) -> None:
        for client in self.clients:
            client.close()


def import_echo(client: httpx2.Client, name: str = "echo", version: str = "1", content: bytes | None = None) -> Any:
    """Upload the echo API description; returns the created (or updated) service."""
    response = client.post(
        "/services",
        files={"file": ("echo.yaml", content if content is not None else ECHO_API.read_bytes(), "application/yaml")},
        data={"name": name, "version": version},
    )
    assert response.status_code in (200, 201), response.text
    return response.json()


def created(response: httpx2.Response) -> Any:
    assert response.status_code == 201, response.text
    return response.json()


def ok(response: httpx2.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def problem(response: httpx2.Response, status: int, field: str | None = None) -> dict[str, Any]:
    """An RFC 9457 problem detail with this status (and naming this field, when given)."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].split(";")[0] == PROBLEM, response.headers
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert isinstance(body["type"], str)
    assert body["type"]
    assert isinstance(body["title"], str)
    assert body["title"]
    assert isinstance(body["detail"], str)
    assert body["detail"]
    if field is not None:
        assert body.get("field") == field, body
    return body
