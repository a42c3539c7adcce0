"""Keeping a gateway's expositions in step with the control plane.

The gateway fetches a snapshot, applies it, then waits for a newer revision and
fetches again. While the control plane cannot be reached it keeps serving the
last snapshot it applied and retries with backoff (0.1 s doubling to 5 s); when
the control plane returns, the next fetch brings it up to date. The source is
the only seam: in `apimcp serve` it reads the store in the same process
(`apimcp.embedded`), a separate gateway talks HTTP to `apimcp control-plane`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import orjson

from apimcp import __version__
from apimcp.backends.http_common import read_limited
from apimcp.gateway.runtime import GatewayRuntime
from apimcp.policies.admin_approval import AdminUnavailable
from apimcp.safety.plain_http import refusal
from apimcp.sealing.keys import GatewayPublicKey
from apimcp.traffic.outbox import Outbox
from apimcp.traffic.reporting import ReportRefused, report_traffic, send_once
from apimcp.traffic.tally import TrafficTally

log = logging.getLogger("apimcp.gateway.sync")
LONG_POLL_SECONDS = 25.0
MAX_BACKOFF_SECONDS = 5.0
AUDIT_INTERVAL_SECONDS = 1.0
AUDIT_BATCH = 1000
UPSTREAMS_CHECK_SECONDS = 2.0
UPSTREAMS_REPEAT_SECONDS = 60.0
APPROVAL_TIMEOUT_SECONDS = 10.0
"""How long a call that needs an administrator's approval waits for the control plane to say where it stands."""
MAX_APPROVAL_ANSWER_BYTES = 64 * 1024


class SnapshotSource(ABC):
    @abstractmethod
    async def fetch(self, known_services: list[str]) -> Mapping[str, Any]:
        """The current snapshot (omitting the compiled services listed as known)."""

    @abstractmethod
    async def wait_for_change(self, revision: int) -> None:
        """Return once a revision newer than `revision` may exist (or after a while, to check)."""

    async def report_audit(self, events: list[dict[str, Any]], report: str) -> None:  # noqa: B027 - optional
        """Hand audit events to the control plane (the default keeps none) as the report `report` (an id, the same
        when they are sent again: kept once); raises when they did not arrive."""

    async def report_upstream_changed(self, service_id: str) -> None:  # noqa: B027 - optional, as audit
        """Ask the control plane to read the MCP server of `service_id` again: the server says a list changed."""

    async def report_upstreams(self, states: Mapping[str, str]) -> None:  # noqa: B027 - optional, as audit
        """Tell the control plane whether each MCP service's server answers (service id -> state)."""

    async def report_traffic(self, revision: int, rows: list[dict[str, Any]], report: str) -> None:  # noqa: B027
        """Hand the control plane what the gateway counted of its requests (`traffic.tally` rows), and the
        revision it serves, as the report `report` (as audit events); raises when they did not arrive."""

    async def request_approval(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        """Where a call's request for an administrator's approval stands (`policies.admin_approval.AdminAsk`);
        `AdminUnavailable` when it cannot be asked (the default: this source keeps no approvals)."""
        raise AdminUnavailable("this gateway's control plane keeps no approvals")


class AuditRefused(ReportRefused):
    """The control plane refused a report (a batch of audit events, say) for what it holds: sending it again
    cannot help."""


class Refused(Exception):
    """The control plane refused the gateway (its token or its key): worth saying every time it changes."""


class HttpSource(SnapshotSource):
    """A control plane reached over HTTP(S) with a gateway token, sealing snapshots to the gateway's key.

    Plain http:// is refused unless the control plane is on loopback or `allow_http` says so; `tls` trusts a
    private CA for an https:// control plane.
    """

    def __init__(
        self,
        session: aiohttp.ClientSession,
        url: str,
        token: str,
        name: str,
        key: GatewayPublicKey,
        labels: Mapping[str, str] | None = None,
        fqdns: list[str] | None = None,
        *,
        allow_http: bool = False,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        problem = refusal(url, allow_http=allow_http)
        if problem is not None:
            raise ValueError(problem)
        self._session = session
        self._url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        self._name = name
        self._tls: ssl.SSLContext | bool = tls if tls is not None else True
        self._registration: dict[str, Any] = {
            "name": name,
            "labels": dict(labels or {}),
            "fqdns": fqdns or [],
            "version": __version__,
            "public_key": key.text,
        }

    async def fetch(self, known_services: list[str]) -> Mapping[str, Any]:
        body = {**self._registration, "known_services": known_services}
        async with self._session.post(
            f"{self._url}/api/v1/gateway/snapshot",
            data=orjson.dumps(body),
            headers={**self._headers, "Content-Type": "application/json"},
            timeout=aiohttp.ClientTimeout(total=60),
            ssl=self._tls,
        ) as response:
            if response.status in (401, 403, 429):  # 429: the organization's quota of gateways is reached
                raise Refused(f"the control plane refused this gateway: {await _detail(response)}")
            if response.status != 200:
                raise ConnectionError(f"the control plane answered HTTP {response.status}: {await _detail(response)}")
            result: Mapping[str, Any] = orjson.loads(await response.read())
            return result

    async def report_audit(self, events: list[dict[str, Any]], report: str) -> None:
        await self._report("audit", {"events": events, "report": report})

    async def report_upstream_changed(self, service_id: str) -> None:
        await self._report("upstream-changed", {"service": service_id})

    async def report_upstreams(self, states: Mapping[str, str]) -> None:
        await self._report("upstreams", {"name": self._name, "upstreams": dict(states)})

    async def report_traffic(self, revision: int, rows: list[dict[str, Any]], report: str) -> None:
        await self._report("traffic", {"name": self._name, "revision": revision, "rows": rows, "report": report})

    async def request_approval(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        try:
            async with self._session.post(
                f"{self._url}/api/v1/gateway/approvals",
                data=orjson.dumps(request),
                headers={**self._headers, "Content-Type": "application/json"},
                timeout=aiohttp.ClientTimeout(total=APPROVAL_TIMEOUT_SECONDS),
                ssl=self._tls,
            ) as response:
                if response.status != 200:
                    detail = await _detail(response)
                    raise AdminUnavailable(f"the control plane answered HTTP {response.status}: {detail}")
                body = await read_limited(response, MAX_APPROVAL_ANSWER_BYTES)
                if body is None:
                    raise AdminUnavailable(
                        f"the control plane's answer is longer than {MAX_APPROVAL_ANSWER_BYTES} bytes"
                    )
                answer = orjson.loads(body)
        except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError) as exc:
            raise AdminUnavailable(f"the control plane did not answer ({type(exc).__name__})") from exc
        if not isinstance(answer, dict):
            raise AdminUnavailable("the control plane's answer is not an object")
        return answer

    async def _report(self, route: str, body: Mapping[str, Any]) -> None:
        """POST `body` to the gateway route `route`: `AuditRefused` when the control plane refuses it for what it
        holds (sending it again cannot help), `ConnectionError` when it may be sent again."""
        async with self._session.post(
            f"{self._url}/api/v1/gateway/{route}",
            data=orjson.dumps(body),
            headers={**self._headers, "Content-Type": "application/json"},
            timeout=aiohttp.ClientTimeout(total=30),
            ssl=self._tls,
        ) as response:
            if response.status == 202:
                return
            detail = f"the control plane answered HTTP {response.status}: {await _detail(response)}"
            if 400 <= response.status < 500 and response.status not in (401, 403, 408, 429):
                raise AuditRefused(detail)
            raise ConnectionError(detail)

    async def wait_for_change(self, revision: int) -> None:
        async with self._session.get(
            f"{self._url}/api/v1/gateway/changes",
            params={"since": str(revision), "name": self._name},
            headers=self._headers,
            timeout=aiohttp.ClientTimeout(total=LONG_POLL_SECONDS + 10),
            ssl=self._tls,
        ) as response:
            if response.status != 200:
                raise ConnectionError(f"the control plane answered HTTP {response.status}")
            await response.read()


async def _detail(response: aiohttp.ClientResponse) -> str:
    """A problem detail's `detail`, else the start of the body."""
    text = (await response.content.read(4096)).decode("utf-8", "replace")
    try:
        detail = orjson.loads(text).get("detail")
    except (orjson.JSONDecodeError, AttributeError):
        detail = None
    return detail if isinstance(detail, str) else text[:300]


class GatewaySync:
    """Follows a source and applies its snapshots to a runtime."""

    def __init__(self, runtime: GatewayRuntime, source: SnapshotSource) -> None:
        self._runtime = runtime
        self._source = source
        self.first_applied = asyncio.Event()
        self.connected = False
        self.refusal: str | None = None
        self.in_step_at = time.monotonic()
        """When the gateway last knew it served the latest revision (the sync lag `/metrics` shows counts from it)."""
        self._reporting: set[asyncio.Task[None]] = set()

    def upstream_changed(self, service_id: str) -> None:
        """Tell the control plane, in the background, that the MCP server of `service_id` says a list changed."""

        async def report() -> None:
            try:
                await self._source.report_upstream_changed(service_id)
            except Exception as exc:  # the periodic reading catches up: worth a line, not more
                log.info("could not tell the control plane that service %s's server changed: %s", service_id, exc)

        task = asyncio.get_running_loop().create_task(report())
        self._reporting.add(task)
        task.add_done_callback(self._reporting.discard)

    async def run(self) -> None:
        backoff = 0.1
        while True:
            try:
                current = await self._source.fetch(self._runtime.known_services())
                if current["revision"] != self._runtime.routes.revision or not self.first_applied.is_set():
                    self._runtime.apply(current)
                    log.info("serving revision %s (%d expositions)", current["revision"], len(current["expositions"]))
                self.first_applied.set()
                self.connected = True
                self.refusal = None
                self.in_step_at = time.monotonic()
                backoff = 0.1
                await self._source.wait_for_change(current["revision"])
                self.in_step_at = time.monotonic()
            except asyncio.CancelledError:
                raise
            except Refused as exc:
                if str(exc) != self.refusal:  # a gateway that is refused says why, once per reason
                    revision = self._runtime.routes.revision
                    serving = f"still serving revision {revision}" if revision >= 0 else "nothing served yet"
                    log.error("%s; %s", exc, serving)
                self.refusal = str(exc)
                self.connected = False
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
            except Exception as exc:
                if self.connected:
                    log.warning(
                        "control plane unreachable (%s); still serving revision %s", exc, self._runtime.routes.revision
                    )
                self.connected = False
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)


async def report_audit(runtime: GatewayRuntime, source: SnapshotSource, outbox: Outbox) -> None:
    """Send the runtime's audit events to the source every second."""
    while True:
        await asyncio.sleep(AUDIT_INTERVAL_SECONDS)
        await send_audit(runtime, source, outbox)


async def send_audit(runtime: GatewayRuntime, source: SnapshotSource, outbox: Outbox) -> None:
    """Send the batch that waits in `outbox`, then the sink's events, in batches; a batch that could not be sent
    waits there to be sent again as it was (`traffic.outbox`), while the sink keeps what comes next (bounded: the
    oldest go first when it is full)."""
    sink = runtime.audit
    while (report := outbox.next(lambda: sink.drain(AUDIT_BATCH))).items:
        try:
            await source.report_audit(report.items, report.id)
        except asyncio.CancelledError:
            outbox.waiting = report
            raise
        except AuditRefused as exc:
            log.warning("%d audit events dropped: %s", len(report.items), exc)
        except Exception as exc:
            outbox.waiting = report
            log.info("audit events not delivered yet (%s); %d waiting", exc, len(report.items))
            break


async def report_upstreams(runtime: GatewayRuntime, source: SnapshotSource) -> None:
    """Tell the source whether each MCP service's server answers: when that changes (looked at every
    `UPSTREAMS_CHECK_SECONDS`) and every `UPSTREAMS_REPEAT_SECONDS` anyway, so that the control plane knows the
    gateway still says so; nothing while the gateway fronts no MCP server."""
    said: dict[str, str] | None = None
    said_at = 0.0
    while True:
        await asyncio.sleep(UPSTREAMS_CHECK_SECONDS)
        states = runtime.upstream_health()
        if not states and not said:
            continue
        if states == said and time.monotonic() - said_at < UPSTREAMS_REPEAT_SECONDS:
            continue
        try:
            await source.report_upstreams(states)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # said again at the next look
            log.info("could not tell the control plane how MCP servers answer: %s", exc)
            continue
        said, said_at = states, time.monotonic()


async def _send_traffic(
    runtime: GatewayRuntime, source: SnapshotSource, rows: list[dict[str, Any]], report: str
) -> None:
    try:
        await source.report_traffic(max(runtime.routes.revision, 0), rows, report)
    except AuditRefused as exc:  # sending them again cannot help
        log.warning("%d rows of traffic counts dropped: %s", len(rows), exc)


@asynccontextmanager
async def following(runtime: GatewayRuntime, source: SnapshotSource) -> AsyncIterator[GatewaySync]:
    """`runtime` kept in step with `source` while the block runs, its audit events reported; afterwards the
    follower stops, a last batch of audit events is sent (with the summaries of refusals counted so far), and the
    runtime ends its streams and closes its backend connections."""
    sync = GatewaySync(runtime, source)
    runtime.follower = sync
    runtime.admin_approvals = source.request_approval
    runtime.upstream_lists.report = sync.upstream_changed
    tally = runtime.traffic = TrafficTally()  # before the first snapshot: every exposition counts its requests
    audit_outbox, traffic_outbox = Outbox(), Outbox()

    async def send_traffic(rows: list[dict[str, Any]], report: str) -> None:
        await _send_traffic(runtime, source, rows, report)

    tasks = [
        asyncio.create_task(sync.run()),
        asyncio.create_task(report_audit(runtime, source, audit_outbox)),
        asyncio.create_task(report_upstreams(runtime, source)),
        asyncio.create_task(report_traffic(tally, send_traffic, traffic_outbox)),
    ]
    try:
        yield sync
    finally:
        runtime.upstream_lists.report = None
        runtime.admin_approvals = None
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        with contextlib.suppress(Exception):
            runtime.audit.end_summaries()  # what refusals counted: said now, not lost with the process
            await asyncio.wait_for(send_audit(runtime, source, audit_outbox), 5)
        with contextlib.suppress(Exception):  # the last counts too
            await asyncio.wait_for(send_once(tally, send_traffic, traffic_outbox), 5)
        await runtime.close()
