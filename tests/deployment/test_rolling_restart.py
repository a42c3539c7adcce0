"""deploy/compose.yaml's topology (a control plane on PostgreSQL, three gateways on one Redis, a round-robin
balancer with no stickiness) under continuous load from clients of both eras (raw HTTP and the official SDK):
a rolling restart (SIGTERM, one by one) fails no request, and a SIGKILL of one fails only what was in flight
on it; sessions carry on without a new initialize."""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx2
import orjson
import pytest
from mcp import Client

from tests.control.conftest import _postgres_schema
from tests.deployment.test_replicas import forget_prefix, shared_state_env
from tests.gateway.conftest import ECHO_SPEC
from tests.gateway.echo_backend import create_app as echo_app
from tests.support.balancer import Balancer
from tests.support.live_aiohttp import live_aiohttp
from tests.support.mcp_http import McpHttp, Reply, modern_message, sse_messages
from tests.support.processes import Background, cli, free_port


@dataclass
class Gateways:
    url: str
    balancer: Balancer
    ports: list[int]
    start: Callable[[int], Background]
    running: list[Background] = field(default_factory=list)

    def restart(self, index: int, how: signal.Signals) -> float:
        """Stop replica `index` with `how`, start it again; the seconds it was away."""
        old = self.running[index]
        stopped = time.monotonic()
        old.process.send_signal(how)
        old.process.wait(30)
        old.stop()  # closes its log
        self.running[index] = self.start(self.ports[index])
        self.wait_serving(self.ports[index])
        return time.monotonic() - stopped

    def wait_serving(self, port: int) -> None:
        """Until the gateway on `port` serves the exposition (it has its first snapshot)."""
        process = self.running[self.ports.index(port)]
        process.wait_for_http(f"http://127.0.0.1:{port}/healthz")
        url = f"http://127.0.0.1:{port}/mcp/default/echo"
        deadline = time.monotonic() + 20
        while httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 404:
            assert time.monotonic() < deadline, process.output()
            time.sleep(0.05)


@pytest.fixture
def gateways(tmp_path: Path) -> Iterator[Gateways]:
    """deploy/compose.yaml's topology as processes: a control plane on PostgreSQL, three `apimcp gateway`s
    following it and sharing a Redis (a key prefix of the machine's), a round-robin balancer in front."""
    env, prefix = shared_state_env()
    schema = _postgres_schema()
    database = next(schema)
    data = tmp_path / "control-plane"
    plane_port = free_port()
    plane_url = f"http://127.0.0.1:{plane_port}"
    plane = Background(tmp_path / "plane.log", "control-plane", "--port", str(plane_port), "--data-dir", str(data),
                       "--database-url", database)  # fmt: skip
    fleet: Gateways | None = None
    try:
        plane.wait_for_http(f"{plane_url}/api/v1/openapi.json")
        login = cli("login", plane_url, "--token", (data / "bootstrap-token").read_text().strip())
        assert login.returncode == 0, login.stderr
        token = json.loads(cli("token", "create", "edge", "--kind", "gateway", "-o", "json").stdout)["token"]
        key_file = tmp_path / "gateway.pem"
        assert cli("gateway-key", "create", "edge", "--out", str(key_file)).returncode == 0
        with live_aiohttp(echo_app) as echo:
            imported = cli("import", str(ECHO_SPEC), "--name", "echo", "--backend", f"{echo}/v1", "--expose", "echo")
            assert imported.returncode == 0, imported.stderr
            ports = [free_port() for _ in range(3)]
            starts = Counter[int]()

            def start(port: int) -> Background:
                starts[port] += 1
                return Background(
                    tmp_path / f"gateway-{port}-{starts[port]}.log",
                    "gateway", "--control-plane", plane_url, "--name", f"gateway-{ports.index(port) + 1}",
                    "--port", str(port), "--key-file", str(key_file),
                    env={**env, "APIMCP_GATEWAY_TOKEN": token},
                )  # fmt: skip

            balancer = Balancer([f"http://127.0.0.1:{port}" for port in ports])
            fleet = Gateways("", balancer, ports, start)
            fleet.running = [start(port) for port in ports]
            for port in ports:
                fleet.wait_serving(port)
            with live_aiohttp(balancer.app()) as base:
                fleet.url = f"{base}/mcp/default/echo"
                yield fleet
    finally:
        for process in fleet.running if fleet else []:
            process.stop()
        plane.stop()
        next(schema, None)
        forget_prefix(prefix)


SDK_MODES = ("legacy", "2026-07-28")


@dataclass
class Load:
    """Clients calling a tool in a loop until stopped: session-era clients keep one session throughout."""

    url: str
    stop: threading.Event = field(default_factory=threading.Event)
    answered: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    initializes: Counter[str] = field(default_factory=Counter)

    def _check(self, era: str, reply: Reply) -> None:
        # A reply cut off after its head (the gateway killed mid-answer) is a failure to count, not a crash
        whole = reply.status == 200 and reply.messages and "result" in reply.body
        if whole and reply.result["structuredContent"]["path"] == "/v1/items/7":
            self.answered[era] += 1
        else:
            self.failures.append(f"{era}: {reply.status} {reply.text[:200]}")

    def _run(self, era: str) -> None:
        call = {"name": "get_item", "arguments": {"itemId": "7"}}
        with McpHttp(self.url) as mcp:
            session = mcp.initialize() if era == "session" else None
            self.initializes[era] += 1
            while not self.stop.is_set():
                try:
                    reply = session.request("tools/call", call) if session else mcp.modern("tools/call", call)
                except httpx2.TransportError as exc:
                    self.failures.append(f"{era}: {type(exc).__name__} {exc}")
                    continue
                self._check(era, reply)

    def _run_sdk(self, mode: str) -> None:
        """The official client, one session (or none) throughout, calling the tool until stopped."""

        async def calls() -> None:
            async with Client(self.url, mode=mode) as client:  # type: ignore[arg-type]
                self.initializes[f"sdk {mode}"] += 1
                while not self.stop.is_set():
                    try:
                        result = await client.call_tool("get_item", {"itemId": "7"})
                    except Exception as exc:  # every failure counts
                        self.failures.append(f"sdk {mode}: {type(exc).__name__} {exc} {getattr(exc, 'error', '')!r}")
                        continue
                    if result.is_error or (result.structured_content or {}).get("path") != "/v1/items/7":
                        self.failures.append(f"sdk {mode}: {result}")
                    else:
                        self.answered[f"sdk {mode}"] += 1

        anyio.run(calls)

    def running(self, per_era: int = 2, *, sdk: bool = False) -> list[threading.Thread]:
        threads = [
            threading.Thread(target=self._run, args=(era,), daemon=True)
            for era in ("session", "2026-07-28")
            for _ in range(per_era)
        ]
        if sdk:
            threads += [threading.Thread(target=self._run_sdk, args=(mode,), daemon=True) for mode in SDK_MODES]
        for thread in threads:
            thread.start()
        return threads

    def until(self, enough: Callable[[], bool], seconds: float = 60) -> None:
        """Until `enough()` holds while the clients call: a count to reach, not a rate (a busy machine is slower)."""
        deadline = time.monotonic() + seconds
        while not enough():
            assert time.monotonic() < deadline, f"only {dict(self.answered)} answered, failures {self.failures[:3]}"
            time.sleep(0.05)

    def finish(self, threads: list[threading.Thread]) -> None:
        self.stop.set()
        for thread in threads:
            thread.join(30)


KINDS = ("session", "2026-07-28", "sdk legacy", "sdk 2026-07-28")


def test_a_rolling_restart_under_load_fails_no_request(gateways: Gateways) -> None:
    load = Load(gateways.url)
    threads = load.running(sdk=True)
    load.until(lambda: all(load.answered[kind] > 50 for kind in KINDS))
    before = sum(load.answered.values())
    away = [gateways.restart(i, signal.SIGTERM) for i in range(3)]
    load.until(lambda: sum(load.answered.values()) - before > 50)
    load.finish(threads)
    during = sum(load.answered.values()) - before
    print(f"rolling restart: {dict(load.answered)} answered, {during} while restarting ({sum(away):.1f} s), "
          f"{gateways.balancer.retried} retried by the balancer, failures {len(load.failures)}")  # fmt: skip
    assert load.failures == []
    assert all(load.answered[kind] > 50 for kind in KINDS)
    assert during > 50
    assert load.initializes["session"] == 2 and load.initializes["sdk legacy"] == 1  # no session opened again


def test_a_killed_gateway_fails_only_what_was_in_flight_on_it(gateways: Gateways) -> None:
    load = Load(gateways.url)
    threads = load.running(sdk=True)
    load.until(lambda: all(load.answered[kind] > 20 for kind in KINDS))
    before = Counter(load.answered)
    gateways.restart(1, signal.SIGKILL)
    load.until(lambda: all(load.answered[kind] > before[kind] for kind in KINDS))  # every client goes on
    load.finish(threads)
    print(f"SIGKILL: {dict(load.answered)} answered, failures {load.failures}")
    assert len(load.failures) <= 6  # at most the six clients' requests that were on the killed gateway
    assert all(load.answered[kind] > 20 for kind in KINDS)
    assert load.initializes["session"] == 2 and load.initializes["sdk legacy"] == 1


def test_a_plan_change_reaches_the_streams_open_on_every_gateway(gateways: Gateways) -> None:
    """Each gateway applies the control plane's snapshot itself, so listeners everywhere hear of it."""
    with contextlib.ExitStack() as stack:
        heard = []
        for port in gateways.ports:  # one session-era GET stream held by each gateway
            url = f"http://127.0.0.1:{port}/mcp/default/echo"
            session = stack.enter_context(McpHttp(url)).initialize()
            client = stack.enter_context(httpx2.Client(timeout=20))
            headers = {"accept": "text/event-stream", **session.headers()}
            heard.append(sse_messages(stack.enter_context(client.stream("GET", url, headers=headers)).iter_lines()))
        body, headers = modern_message("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
        listener = stack.enter_context(httpx2.Client(timeout=20))
        url = f"http://127.0.0.1:{gateways.ports[0]}/mcp/default/echo"
        listen = sse_messages(
            stack.enter_context(listener.stream("POST", url, content=orjson.dumps(body), headers=headers)).iter_lines()
        )
        assert next(listen)["method"] == "notifications/subscriptions/acknowledged"
        changed = cli("plan", "update", "default", "--exclude", "delete_item")
        assert changed.returncode == 0, changed.stderr
        for messages in [*heard, listen]:
            assert next(messages)["method"] == "notifications/tools/list_changed"
