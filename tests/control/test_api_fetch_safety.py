"""The REST API's fetches on someone's behalf (imports and attachments by URL) under the fetch policy, bounded
YAML uploads, and imports that never starve the rest of the API."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

from apimcp.control.api.app import create_api
from apimcp.control.crypto import KeySet
from apimcp.control.import_pool import ImportCapacity, ImportPool
from apimcp.control.plane import ControlPlane
from apimcp.control.store import open_store
from apimcp.safety.addresses import AddressPolicy
from apimcp.safety.fetch import FetchLimits
from tests.control.api_harness import Api, Org, import_echo, ok, problem
from tests.safety.test_yaml_loading import alias_bomb, never_built, nine_by_six
from tests.support.fetching import LOOPBACK_ALLOWED, connections_to, counting_listener, forbid_connections
from tests.support.live_server import live_server
from tests.support.misbehaving import dripping, misbehaving, resetting, silent
from tests.support.processes import free_port


@contextmanager
def control_plane(
    tmp_path: Path,
    policy: AddressPolicy | None = None,
    limits: FetchLimits | None = None,
    capacity: ImportCapacity | None = None,
) -> Iterator[Api]:
    """A control plane on SQLite with these fetch and import settings, its API served on loopback."""
    store = open_store(f"sqlite:///{tmp_path / 'apimcp.db'}")
    plane = ControlPlane(
        store,
        KeySet.generate(),
        fetch_policy=policy or AddressPolicy(),
        fetch_limits=limits or FetchLimits(),
        imports=ImportPool(capacity),
    )
    try:
        with live_server(create_api(plane)) as base:
            api = Api(plane, base.replace("//localhost:", "//127.0.0.1:"))
            try:
                yield api
            finally:
                api.close()
    finally:
        plane.imports.shutdown()
        store.dispose()


@pytest.fixture
def strict(tmp_path: Path) -> Iterator[Org]:
    """An organization on a control plane with the default fetch policy."""
    with control_plane(tmp_path) as api:
        yield api.org("acme")


@pytest.fixture
def counted() -> Iterator[socket.socket]:
    with counting_listener() as listener:
        yield listener


SPELLINGS = ["127.0.0.1", "localhost", "0.0.0.0", "2130706433", "0x7f000001", "127.1", "[::1]", "[::ffff:127.0.0.1]"]


def test_imports_by_url_refuse_loopback_in_every_spelling(strict: Org, counted: socket.socket) -> None:
    port = counted.getsockname()[1]
    for host in SPELLINGS:
        answer = problem(strict.user.post("/services", json={"url": f"http://{host}:{port}/openapi.yaml"}), 422, "url")
        assert "refused to fetch it: " in answer["detail"], answer
        assert "--fetch-allow" in answer["detail"]
    assert connections_to(counted) == 0
    assert ok(strict.user.get("/services")) == []


def test_a_refusal_says_which_rule_refused_and_how_to_allow_the_host(strict: Org) -> None:
    answer = problem(strict.user.post("/services", json={"url": "http://localhost:9/openapi.yaml"}), 422, "url")
    assert answer["detail"] == (
        "http://localhost:9/openapi.yaml: refused to fetch it: localhost resolves to a loopback address; the server "
        "fetches only public addresses unless its fetch allow-list names the host: start it with --fetch-allow "
        "localhost (or APIMCP_FETCH_ALLOW=localhost; in a gateway configuration file, server.fetch_allow: "
        "[localhost])"
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://10.0.0.1/openapi.yaml",
        "http://[fe80::1]/openapi.yaml",
        "http://100.64.0.1/openapi.yaml",
        "http://224.0.0.1/openapi.yaml",
    ],
)
def test_imports_and_attachments_by_url_never_reach_internal_networks(
    strict: Org, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    forbid_connections(monkeypatch)
    answer = problem(strict.user.post("/services", json={"url": url}), 422, "url")
    assert "refused to fetch it: " in answer["detail"]
    service = import_echo(strict.user)
    attached = strict.user.post(f"/services/{service['id']}/artifacts/from-url", json={"url": url})
    assert "refused to fetch it: " in problem(attached, 422, "url")["detail"]


def test_introspection_and_reflection_by_url_are_refused_too(strict: Org, counted: socket.socket) -> None:
    port = counted.getsockname()[1]
    introspect = {"url": f"http://127.0.0.1:{port}/graphql", "introspect": True, "name": "g", "version": "1"}
    assert "refused to introspect it" in problem(strict.user.post("/services", json=introspect), 422)["detail"]
    reflect = {"url": f"grpc://localhost:{port}", "name": "shop"}
    assert "refused to reflect it" in problem(strict.user.post("/services", json=reflect), 422)["detail"]
    assert connections_to(counted) == 0


def test_error_messages_do_not_tell_open_ports_from_closed_ones(tmp_path: Path) -> None:
    """With loopback allowed (a company's internal hosts), a refused, a reset and a silent port read alike."""
    with (
        control_plane(tmp_path, LOOPBACK_ALLOWED, FetchLimits(timeout_seconds=0.5)) as api,
        misbehaving(resetting) as reset,
        misbehaving(silent) as quiet,
    ):
        acme = api.org("acme")
        closed_port = free_port()
        details = []
        for port in (closed_port, reset.port, quiet.port):
            answer = problem(acme.user.post("/services", json={"url": f"http://127.0.0.1:{port}/x.yaml"}), 422, "url")
            details.append(answer["detail"].replace(str(port), "PORT"))
    assert len(set(details)) == 1, details
    assert not re.search(r"refused|reset|timed out|errno", details[0], re.IGNORECASE)


def test_an_alias_bomb_upload_is_refused_before_it_is_built(strict: Org, monkeypatch: pytest.MonkeyPatch) -> None:
    """It cost the control plane 1.4 GB and 4 s: it is refused from its node graph, before anything is built."""
    never_built(monkeypatch)  # the API runs in this process: building any YAML now fails the import loudly
    response = strict.user.post("/services", files={"file": ("bomb.yaml", alias_bomb(), "application/yaml")})
    answer = problem(response, 422, "file")
    assert "expands to more than" in answer["detail"] and "(line " in answer["detail"]
    recursive = strict.user.post("/services", files={"file": ("loop.yaml", b"openapi: &a [*a]\n", "application/yaml")})
    assert "a recursive alias" in problem(recursive, 422, "file")["detail"]
    monkeypatch.undo()  # a real description is built, of course
    service = import_echo(strict.user)
    never_built(monkeypatch)
    attached = strict.user.post(f"/services/{service['id']}/artifacts", files={"file": ("hints.yaml", alias_bomb())})
    assert "expands to more than" in problem(attached, 422, "file")["detail"]
    assert ok(strict.user.get("/services"))[0]["name"] == service["name"]  # and the server is fine


def test_yaml_aliases_are_not_expanded_far_beyond_their_size(strict: Org, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 21, L3: the 6 levels of 9 aliases that made a 4.4 MB tools/list, uploaded to POST /services, are
    refused from the node graph, naming the limit and where; the artifact route reads YAML the same way."""
    never_built(monkeypatch)
    answer = problem(strict.user.post("/services", files={"file": ("nine.yaml", nine_by_six(), "application/yaml")}),
                     422, "file")  # fmt: skip
    assert "aliases expand it to 1270516 nodes, more than the limit (100000 nodes, or 4 times" in answer["detail"]
    assert "(line 10, column 5)" in answer["detail"]
    monkeypatch.undo()
    service = import_echo(strict.user)
    never_built(monkeypatch)
    attached = strict.user.post(f"/services/{service['id']}/artifacts", files={"file": ("nine.yaml", nine_by_six())})
    assert "more than the limit (100000 nodes" in problem(attached, 422, "file")["detail"]


def serving(body: bytes) -> Callable[..., Awaitable[None]]:
    """An ASGI app answering every GET with `body` as YAML."""

    async def app(scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Awaitable[None]]) -> None:
        if scope["type"] != "http":
            return
        headers = [(b"content-type", b"application/yaml"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def test_an_alias_bomb_fetched_by_url_is_refused_before_it_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bomb imported or attached by URL (from an allowed internal host) takes the path of an upload: refused
    from its node graph, before anything is built, naming where it expands."""
    with control_plane(tmp_path, LOOPBACK_ALLOWED) as api, live_server(serving(alias_bomb())) as base:
        acme = api.org("acme")
        service = import_echo(acme.user)
        url = base.replace("//localhost:", "//127.0.0.1:") + "/bomb.yaml"
        never_built(monkeypatch)
        imported = problem(acme.user.post("/services", json={"url": url}), 422)
        assert "expands to more than" in imported["detail"] and "(line " in imported["detail"]
        attached = problem(acme.user.post(f"/services/{service['id']}/artifacts/from-url", json={"url": url}), 422)
        assert "expands to more than" in attached["detail"]
        monkeypatch.undo()
        assert [s["name"] for s in ok(acme.user.get("/services"))] == [service["name"]]  # nothing was stored


def test_stalled_imports_never_starve_the_rest_api(tmp_path: Path) -> None:
    """45 imports of a description that drips a byte every 0.2 s: the REST API answers other requests at once,
    imports beyond the import capacity are turned away with 503 and Retry-After, and each admitted import ends
    at its total deadline (2 s here) although bytes keep coming."""
    capacity = ImportCapacity(workers=4, queued=4, retry_after_seconds=7)
    with (
        misbehaving(dripping(0.2)) as drip,
        control_plane(tmp_path, LOOPBACK_ALLOWED, FetchLimits(timeout_seconds=2.0), capacity) as api,
    ):
        acme = api.org("acme")

        answered = threading.Semaphore(0)

        def import_stalled(_: int) -> tuple[httpx2.Response, float]:
            with httpx2.Client(base_url=f"{api.base}/api/v1", headers={"Authorization": f"Bearer {acme.user_token}"},
                               timeout=30) as client:  # fmt: skip
                response = client.post("/services", json={"url": f"{drip.url}/openapi.yaml"})
                answered.release()
                return response, time.monotonic()

        with ThreadPoolExecutor(45) as clients:
            outcomes = clients.map(import_stalled, range(45))
            # Once the flood is in (the 37 refusals answered, 4 imports fetching, 4 more waiting), every import
            # worker is held until a deadline: a starved API would answer only after an import ended.
            for _ in range(37):
                assert answered.acquire(timeout=10)
            deadline = time.monotonic() + 10
            while drip.accepted < 4 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert drip.accepted >= 4
            imports_ended_when_answered = []
            for _ in range(3):
                assert ok(acme.user.get("/services")) == []
                assert ok(acme.user.get("/organization"))["name"] == "acme"
                imports_ended_when_answered.append(len(drip.ended))
            results = list(outcomes)
            # The drip never ends a connection itself: each one that ends before it stops was cut by its import.
            deadline = time.monotonic() + 10
            while len(drip.ended) < 8 and time.monotonic() < deadline:
                time.sleep(0.01)
            cut_by_the_imports = len(drip.ended)
    # answered while every import worker was stalled: an order, not a latency, so a loaded machine holds
    assert imports_ended_when_answered == [0, 0, 0]
    busy = [(r, end) for r, end in results if r.status_code == 503]
    stalled = [(r, end) for r, end in results if r.status_code == 422]
    assert (len(busy), len(stalled)) == (37, 8), [r.status_code for r, _ in results]
    for response, _ in busy:
        answer = problem(response, 503)
        assert response.headers["Retry-After"] == "7"
        assert "4 running and 4 waiting, its import capacity" in answer["detail"]
    # turned away at once: every refusal was answered before any admitted import reached its deadline (a
    # refusal that waited for a worker would come after one); ordered, not timed, so a loaded machine holds
    assert max(end for _, end in busy) < min(end for _, end in stalled)
    for response, _ in stalled:
        assert "no complete answer from 127.0.0.1:" in problem(response, 422, "url")["detail"]
    # cut at the deadline although bytes kept coming: each connection was closed by its import, none left dripping
    assert drip.accepted == 8 and cut_by_the_imports == 8
    assert max(drip.lasted) < 10 * 2.0, drip.lasted  # timing-ok: ten times the deadline, the default is 30 s
