"""The gateway's live state, rebuilt from each snapshot and swapped in one assignment.

Applying a snapshot decodes the compiled services it does not hold yet (shared
by every exposition of the same service), builds the expositions whose plan or
service changed, keeps the others untouched, and replaces the routing table at
once: a request sees the old table or the new one, never a mix. An exposition
that changes keeps its endpoint, so sessions and open streams survive, and its
listeners hear that the tool list changed. Sealed secrets are opened with the
gateway's key before an exposition is compared with the one served: they are
sealed afresh in every snapshot, what they hold is what counts.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence, Sized
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp
import orjson

from apimcp.artifacts.bundle import merge
from apimcp.artifacts.filter_runner import FilterLimits, FilterRunner
from apimcp.artifacts.scripting import ScriptLimits, ScriptRunner
from apimcp.audit.events import Where
from apimcp.audit.sink import AuditObserver, AuditSink
from apimcp.auth.guard import OPEN, InboundGuard, Refusal
from apimcp.auth.resource import ExpositionResource
from apimcp.backends.base import Backend
from apimcp.backends.token_exchange import TokenExchanger
from apimcp.catalog.codec import decode_service
from apimcp.catalog.model import Service
from apimcp.catalog.read_only import decided
from apimcp.catalog.selection import served_selection
from apimcp.codemode.limits import CodeModeLimits
from apimcp.codemode.setting import parse_code_mode
from apimcp.elicitation.broker import ElicitationBroker
from apimcp.elicitation.secrets import KINDS as ELICITED_KINDS
from apimcp.elicitation.secrets import ElicitedSecret, elicited_secret
from apimcp.federation.backend import McpBackend
from apimcp.federation.health import UpstreamHealth
from apimcp.federation.stdio_channel import StdioCommand
from apimcp.forwarding.policy import parse_header_policy
from apimcp.gateway.backends import BackendFactory, check_references, credential_list, token_exchange_of
from apimcp.gateway.call_preparation import CallPreparation, ElicitedCredential, ExchangedCredential, UserCredential
from apimcp.gateway.calls import CallObserver, CallPath, CallTarget
from apimcp.gateway.composition import CrossService, Extras
from apimcp.gateway.door import DoorObserver
from apimcp.gateway.exposition import ExpositionHandler, ExpositionSettings, ToolSet
from apimcp.gateway.inbound import InboundBuilder
from apimcp.gateway.member_backends import MemberBackend
from apimcp.gateway.resource_loading import BackendLoader
from apimcp.gateway.routing import Routes, canonical_path, index
from apimcp.gateway.tool_entries import RefusedEntry
from apimcp.gateway.upstream_lists import UpstreamLists
from apimcp.guardrails.registry import exposition_guardrails
from apimcp.policies.admin_approval import AdminAsk
from apimcp.policies.rules import exposition_rules
from apimcp.protocol import CacheHint, EndpointOptions, McpEndpoint
from apimcp.protocol.caller import Caller, request_host
from apimcp.protocol.cors import CorsPolicy
from apimcp.protocol.observe import RequestObserver
from apimcp.protocol.tasks.policy import parse_task_mode
from apimcp.ratelimit.limiter import RateLimiter, Refused
from apimcp.ratelimit.policy import parse_rate_limits
from apimcp.resilience.backend import ResilientBackend
from apimcp.resilience.cache import AnswerCache
from apimcp.resilience.cached import Cached
from apimcp.resilience.failover import FailoverBackend
from apimcp.resilience.settings import Breaker, Resilience, parse_resilience
from apimcp.safety.addresses import AddressPolicy
from apimcp.sealing.keys import GatewayKey
from apimcp.sealing.snapshots import SealError, open_exposition
from apimcp.shaping.limits import ShapingLimits
from apimcp.shaping.pool import ShapingPool
from apimcp.state import GatewayState
from apimcp.telemetry import Telemetry, installed
from apimcp.telemetry.backend_calls import instrumented
from apimcp.telemetry.gauges import GatewayFigures
from apimcp.telemetry.observer import TelemetryObserver, chained
from apimcp.telemetry.resilience import cache_heard, resilience_heard
from apimcp.traffic.observer import TimedBackend, TrafficObserver
from apimcp.traffic.tally import TrafficTally

log = logging.getLogger("apimcp.gateway")


@dataclass(frozen=True, slots=True)
class Route:
    exposition_id: str
    organization: str
    name: str | None
    service: str
    version: str
    endpoint: McpEndpoint
    guard: InboundGuard = OPEN
    resource: ExpositionResource | None = None
    """The exposition as an OAuth protected resource, when it takes access tokens."""
    backends: tuple[Backend, ...] = ()
    """What the exposition calls (the gateway lets go of the connections no route uses)."""
    elicited: tuple[ElicitedSecret, ...] = ()
    """Secrets whose value each user supplies."""
    exchanges: tuple[str, ...] = ()
    """Keys of the token exchanges its calls make."""
    door: tuple[DoorObserver, ...] = ()
    """What hears of the requests its guard or its rate limits refuse (audit, metrics)."""
    limiter: RateLimiter | None = None
    """The plan's rate limits (None: none)."""

    @property
    def canonical_path(self) -> str:
        return canonical_path(self.exposition_id, self.organization, self.name)


class Following(Protocol):
    connected: bool
    in_step_at: float
    """`time.monotonic()` when the gateway last knew it served the control plane's latest revision."""


def _client(scope: Mapping[str, Any]) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None


def _label(route: Route) -> str:
    return f"{route.organization}/{route.name or route.exposition_id}"


def service_names(members: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each member's service name, as tool search filters on it; `name:version` where members share a name, and
    the service's id (a configuration file's key) where they share that too (two descriptions titled `FastAPI`,
    version `0.1.0`, as FastAPI writes them by default)."""
    names = [str(member["service"]["name"]) for member in members]
    shared = {name for name in names if names.count(name) > 1}
    versioned = [
        f"{name}:{member['service']['version']}" if name in shared else name
        for name, member in zip(names, members, strict=True)
    ]
    twice = {name for name in versioned if versioned.count(name) > 1}
    return [
        str(member["service"]["id"]) if name in twice else name for name, member in zip(versioned, members, strict=True)
    ]


class GatewayRuntime:
    """Builds expositions from snapshots and routes requests to them."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        options: EndpointOptions,
        *,
        key: GatewayKey | None = None,
        fetch_policy: AddressPolicy | None = None,
        script_limits: ScriptLimits | None = None,
        code_limits: CodeModeLimits | None = None,
        filter_limits: FilterLimits | None = None,
        shaping_limits: ShapingLimits | None = None,
        public_url: str | None = None,
        state: GatewayState | None = None,
        telemetry: Telemetry | None = None,
        commands: Mapping[str, StdioCommand] | None = None,
    ) -> None:
        """`fetch_policy`: which addresses OAuth token endpoints, key sets and remote resource contents may be at
        (default: public ones only); `script_limits`: what one run of a scripted custom tool may cost, and
        `code_limits` one code-mode program;
        `filter_limits`: what output filters may add, and from what size they run in a shaping process;
        `shaping_limits`: from what size answers and results are never parsed on the event loop, and the shaping
        processes that do what needs their value (started when first needed, stopped by `close`);
        `public_url`: the origin clients reach this gateway at (OAuth resource identifiers and elicitation links
        are built on it; default: the request's); `state`: where users' credentials are kept (default: memory);
        `telemetry`: spans and metrics (default: what the process installed, off unless configured); `commands`:
        how to start the stdio MCP servers of a configuration file, by service id (never from a snapshot)."""
        self.telemetry = telemetry if telemetry is not None else installed()
        self.follower: Following | None = None
        """The sync loop that follows a control plane, when there is one (`gateway.sync.following` sets it)."""
        self.traffic: TrafficTally | None = None
        """Where the expositions count their requests for the control plane (set with `follower`)."""
        self.admin_approvals: AdminAsk | None = None
        """Where calls that need an administrator's approval ask for it: the control plane followed (set with
        `follower`); None: no administrator can be asked."""
        stores = state or GatewayState()
        self._shaping_limits = shaping_limits or ShapingLimits()
        self.shaping = ShapingPool(self._shaping_limits)
        """Where large answers are read and checked, and large results filtered (this process's own children)."""
        self._backends = BackendFactory(
            session,
            fetch_policy=fetch_policy,
            shared_tokens=stores.user_values,
            large_from_bytes=self._shaping_limits.large_from_bytes,
            commands=commands,
        )
        self.upstream_lists = UpstreamLists()
        """What MCP servers say changed, passed on to the control plane followed (if any)."""
        self._backends.on_list_changed = self.upstream_lists.heard
        self._inbound = InboundBuilder(self._backends.guarded_session, public_url)
        self._buckets = stores.buckets
        self.elicitation = ElicitationBroker(
            stores.user_values, stores.pending, self._backends.guarded_session, public_url=public_url,
            notify=self._notify_session,
        )  # fmt: skip
        self._exchangers: dict[str, TokenExchanger] = {}
        self.audit = AuditSink()
        """Audit events of the expositions whose plan asks for them, waiting to reach the control plane."""
        self._options = options
        self._key = key
        """Opens the sealed secrets of snapshots (a gateway that follows a control plane holds one)."""
        self._services: dict[str, Service] = {}
        self._built: dict[str, tuple[bytes, Route]] = {}
        self._read: dict[str, tuple[str, frozenset[str]]] = {}
        self._tool_sets: dict[tuple[Any, ...], ToolSet] = {}
        self._script_limits = script_limits or ScriptLimits()
        self._code_limits = code_limits or CodeModeLimits()
        self._scripts: ScriptRunner | None = None
        """Started with the first exposition that has scripted custom tools or code mode (it owns threads)."""
        self._filters = FilterRunner(filter_limits, self.shaping)
        self.routes = Routes()
        if self.telemetry.metrics is not None:
            self.telemetry.metrics.watch_gateway(self.figures)

    def figures(self) -> GatewayFigures:
        """What `/metrics` shows of this gateway's state, read when scraped."""
        routes = self.routes
        streams = {_label(route): len(route.endpoint.changes) for route in routes.by_id.values()}
        sessions = self._options.sessions
        counted = len(sessions) if isinstance(sessions, Sized) else None
        follower = self.follower
        connected = lag = None
        if follower is not None:
            connected = follower.connected
            lag = 0.0 if connected else time.monotonic() - follower.in_step_at
        return GatewayFigures(
            routes.revision, len(routes.by_id), streams, counted, connected, lag, self.upstream_states()
        )

    def known_services(self) -> list[str]:
        return list(self._services)

    def apply(self, snapshot: Mapping[str, Any], *, strict: bool = False) -> None:
        """Serve `snapshot` from now on. An exposition that cannot be built is logged and skipped
        (its previous version, if any, keeps serving); with `strict`, the error is raised instead."""
        for digest, compiled in snapshot.get("services", {}).items():
            if digest not in self._services:
                self._services[digest] = compiled if isinstance(compiled, Service) else decode_service(compiled)
        built: dict[str, tuple[bytes, Route]] = {}
        read: dict[str, tuple[str, frozenset[str]]] = {}
        """Per exposition served, its creation time and the services it uses (kept from the last snapshot for
        one kept serving as it was)."""
        for exposition in snapshot["expositions"]:
            exposition_id = exposition.get("id") if isinstance(exposition, Mapping) else None
            if not isinstance(exposition_id, str):
                if strict:
                    raise ValueError("an exposition of the snapshot has no id")
                log.error("an exposition of the snapshot has no id; it is not served")
                continue
            previous = self._built.get(exposition_id)
            try:
                # read before anything changes: a malformed exposition is skipped, not half-applied
                stamp = str(exposition["created_at"])
                uses = frozenset(member["service"]["hash"] for member in exposition["members"])
                opened = open_exposition(exposition, self._key)
                fingerprint = orjson.dumps(opened, option=orjson.OPT_SORT_KEYS)
                if previous is not None and previous[0] == fingerprint:
                    built[exposition_id] = previous
                    read[exposition_id] = (stamp, uses)
                    continue
                route = self._route(opened, previous[1] if previous is not None else None)
            except Exception as exc:
                if strict:
                    raise
                if isinstance(exc, SealError):  # says which secret and why; a traceback would add nothing
                    log.error("exposition %s could not be built; it is not served: %s", exposition_id, exc)
                else:
                    log.exception("exposition %s could not be built; it is not served", exposition_id)
                if previous is not None and exposition_id in self._read:
                    built[exposition_id] = previous  # keep serving what worked
                    read[exposition_id] = self._read[exposition_id]
                continue
            built[exposition_id] = (fingerprint, route)
            read[exposition_id] = (stamp, uses)
        for exposition_id, (_, route) in self._built.items():
            if exposition_id not in built:
                route.endpoint.shutdown()
        self._built, self._read = built, read
        self._backends.retain(backend for _, route in built.values() for backend in route.backends)
        used = {digest for _, uses in read.values() for digest in uses}
        self._services = {digest: service for digest, service in self._services.items() if digest in used}
        self._tool_sets = {key: tools for key, tools in self._tool_sets.items() if key[0] in used}
        self._inbound.retain({
            (issuer, route.resource.settings.jwks_uri)
            for _, route in built.values() if route.resource is not None
            for issuer in route.resource.settings.issuers
        })  # fmt: skip
        created = {exposition_id: stamp for exposition_id, (stamp, _) in read.items()}
        self.routes = index(snapshot.get("revision", 0), [route for _, route in built.values()], created)
        self.elicitation.use(secret for _, route in built.values() for secret in route.elicited)
        exchanges = {key for _, route in built.values() for key in route.exchanges}
        self._exchangers = {key: e for key, e in self._exchangers.items() if key in exchanges}

    def upstream_states(self) -> dict[str, int]:
        """The MCP servers this gateway calls, counted by whether they answer (`federation.health`); each server
        once, however many expositions front it."""
        latest = self._latest_health(lambda b: b.endpoint if not b.endpoint.startswith("stdio:") else b.service_id)
        return dict(Counter(health.state for health in latest.values()))  # a stdio server is its service's own

    def upstream_health(self) -> dict[str, str]:
        """Whether each MCP service's server answers, by service id (what the gateway reports to its control
        plane)."""
        latest = self._latest_health(lambda b: b.service_id)
        return {service: health.state for service, health in latest.items() if service is not None}

    def _latest_health(self, key: Callable[[McpBackend], str | None]) -> dict[str | None, UpstreamHealth]:
        latest: dict[str | None, UpstreamHealth] = {}  # the newest news of each server, from any exposition
        for route in self.routes.by_id.values():
            for backend in route.backends:
                if isinstance(backend, McpBackend):
                    known = latest.get(key(backend))
                    if known is None or backend.health.since > known.since:
                        latest[key(backend)] = backend.health
        return latest

    def _route(self, exposition: Mapping[str, Any], previous: Route | None) -> Route:
        members: list[tuple[ToolSet, Backend]] = []
        called: list[MemberBackend] = []
        elicited: list[ElicitedSecret] = []
        exchanges: list[str] = []
        raw_backends: list[Backend] = []
        telemetry = self.telemetry
        label = f"{exposition['organization']}/{exposition['name'] or exposition['id']}"
        services: list[Service] = []
        resilience = parse_resilience(exposition.get("resilience"))
        cache_settings = resilience.cache
        answers = AnswerCache() if cache_settings is not None else None
        guardrails = exposition_guardrails(exposition)
        notes = guardrails.note if guardrails else None  # an MCP server's messages during a call, scanned too
        for member in exposition["members"]:
            check_references(member.get("credentials"), exposition["organization"])
            service = self._services[member["service"]["hash"]]
            services.append(service)
            backend = self._resilient(service, member, resilience, label, raw_backends)
            members.append((self._tool_set(service, member, exposition["output_schemas"]), backend))
            server = raw_backends[-1].endpoint if isinstance(raw_backends[-1], McpBackend) else None
            preparation = self._preparation(exposition, member, elicited, exchanges, server)
            cached = None
            if answers is not None and cache_settings is not None:
                scope = f"{len(called)}:{member['service']['hash']}"  # the member's place, and what it serves
                cached = Cached(answers, cache_settings, scope, cache_heard(telemetry.metrics, label))
            called.append(MemberBackend(backend, preparation, cached, notes))
        name = exposition["name"] or exposition["id"]
        guard, resource = self._inbound.build(exposition["inbound"], name)
        first = exposition["members"][0]["service"]
        audit = None
        if exposition.get("audit"):
            where = Where(exposition["organization"], exposition["id"], name, first["name"], first["version"])
            audit = AuditObserver(self.audit, where)
        observer: RequestObserver | None = audit
        call_observers: list[CallObserver] = [audit] if audit is not None else []
        door: list[DoorObserver] = [audit] if audit is not None else []
        if telemetry.on:
            telemetry_observer = TelemetryObserver(telemetry, label, lambda: self.routes.revision)
            observer = chained(audit, telemetry_observer)
            call_observers.append(telemetry_observer)
            if telemetry.metrics is not None:  # refusals are counted, never traced: no span without metrics
                door.append(telemetry_observer)
        counted = None
        if self.traffic is not None:
            counted = TrafficObserver(self.traffic, exposition["id"])
            observer = chained(observer, counted)
            call_observers.append(counted)
            door.append(counted)
        limiter = self._limiter(exposition)
        settings = ExpositionSettings(
            name=name,
            title=exposition.get("title"),
            instructions=exposition.get("instructions"),
            cache_hints={m: CacheHint(ttl_ms=h["ttl_ms"], scope=h["scope"]) for m, h in exposition["cache"].items()},
            resource=resource,
            observer=observer,
            calls=CallPath(
                exposition["id"],
                name,
                limiter,
                call_observers,
                guardrails,
                admin=lambda: self.admin_approvals,
            ),
            task_policy=parse_task_mode(exposition.get("tasks") or "off"),
            tool_search=exposition.get("tool_search") is True,
            code_mode=parse_code_mode(exposition.get("code_mode")),
            services=service_names(exposition["members"]),
            policies=exposition_rules(exposition),
        )
        bundle = merge(member.get("artifacts", ()) for member in exposition["members"])
        scripted = any("script" in spec for spec in bundle.custom_tools.values())
        if self._scripts is None and (scripted or settings.code_mode != "off"):
            self._scripts = ScriptRunner(self._script_limits, self._shaping_limits.large_from_bytes)
        cross_service = self._cross_service(exposition["organization"])
        lane = self.shaping.lane(exposition["id"])  # expositions take turns for the shaping processes
        extras = Extras(
            bundle=bundle,
            runner=self._scripts,
            code_limits=self._code_limits,
            filters=self._filters.using(lane),
            shaper=lane,
            cross_service=cross_service,
            backends=called,
            upstreams=[
                (service.offerings, member)
                for service, member in zip(services, called, strict=True)
                if service.offerings
            ],
            relays_logs=any(service.kind == "mcp" for service in services),
        )
        loader = BackendLoader(called, self._backends.guarded_session)  # reads files as its operations are called
        handler = ExpositionHandler(settings, members, extras, loader)
        if counted is not None:
            counted.serves = lambda tool: handler.tool_definition(tool) is not None
        if previous is not None:
            previous.endpoint.replace_handler(handler)
            endpoint = previous.endpoint
        else:
            endpoint = McpEndpoint(handler, self._options, endpoint_id=exposition["id"])
        for backend in raw_backends:  # what an MCP server says changed reaches the clients subscribed to it
            if isinstance(backend, McpBackend):
                backend.upstream.routes.updated.append(endpoint.changes.resource_updated)
        return Route(
            exposition_id=exposition["id"],
            organization=exposition["organization"],
            name=exposition["name"],
            service=first["name"],
            version=first["version"],
            endpoint=endpoint,
            guard=guard,
            resource=resource,
            backends=tuple(raw_backends),
            elicited=tuple(elicited),
            exchanges=tuple(exchanges),
            door=tuple(door),
            limiter=limiter,
        )

    def _resilient(
        self, service: Service, member: Mapping[str, Any], resilience: Resilience, label: str, raw: list[Backend]
    ) -> Backend:
        """The member's backend as calls reach it: instrumented (each attempt its own span), behind its circuit
        breaker, each of its URLs in order when it has several (each URL with a breaker: its health), retried;
        `raw` gets the backends built, to close."""
        telemetry, heard = self.telemetry, resilience_heard(self.telemetry.metrics, label)
        endpoints = [member["backend_endpoint"], *(member.get("fallback_endpoints") or ())]
        if service.kind == "mcp":
            endpoints = endpoints[:1]
        built: list[Backend] = []
        for endpoint in endpoints:
            backend = self._backends.build(service, {**member, "backend_endpoint": endpoint})
            raw.append(backend)
            if telemetry.on:
                backend = instrumented(backend, service.kind, label, telemetry.tracing, telemetry.metrics)
            if resilience.breaker is not None or len(endpoints) > 1:
                guarded = Resilience(breaker=resilience.breaker or Breaker())
                backend = ResilientBackend(backend, guarded, f"{label} ({endpoint})", heard)
            built.append(backend)
        backend = built[0] if len(built) == 1 else FailoverBackend(built, heard)
        if resilience.retries is not None:
            backend = ResilientBackend(backend, Resilience(retries=resilience.retries), label, heard)
        return TimedBackend(backend) if self.traffic is not None else backend

    def _limiter(self, exposition: Mapping[str, Any]) -> RateLimiter | None:
        limits = parse_rate_limits(exposition.get("rate_limit"), "rate_limit")
        return RateLimiter(exposition["id"], limits, self._buckets) if limits else None

    def _preparation(
        self, exposition: Mapping[str, Any], member: Mapping[str, Any], elicited: list[ElicitedSecret],
        exchanges: list[str], server: str | None = None,
    ) -> CallPreparation:  # fmt: skip
        """What the member's calls add for their request: passed-on headers, the caller's own credentials
        (`server`: the member's MCP server, whose authorization server `user_oauth` may discover)."""
        organization = exposition["organization"]
        credentials: list[UserCredential] = []
        for raw in credential_list(member.get("credentials")):
            if raw["kind"] in ELICITED_KINDS:
                secret = elicited_secret(organization, raw, server)
                elicited.append(secret)
                credentials.append(ElicitedCredential(self.elicitation, secret, exposition["id"]))
            elif raw["kind"] == "oauth_token_exchange":
                exchange = token_exchange_of(raw)
                key = f"{organization}/{raw.get('id') or raw.get('name')}"
                exchanger = self._exchangers.get(key)
                if exchanger is None or exchanger.exchange != exchange:
                    exchanger = self._exchangers[key] = TokenExchanger(self._backends.guarded_session, exchange)
                exchanges.append(key)
                credentials.append(ExchangedCredential(exchanger, str(raw.get("name") or key)))
        policy = parse_header_policy(member.get("header_policy"), "header_policy")
        return CallPreparation(policy, credentials)

    def _notify_session(self, exposition_id: str, session_id: str, method: str, params: dict[str, Any]) -> bool:
        built = self._built.get(exposition_id)
        return built is not None and built[1].endpoint.notify_session(session_id, method, params)

    def _tool_set(self, service: Service, member: Mapping[str, Any], output_schemas: bool) -> ToolSet:
        """The tools of a member's selection, shared with every exposition that selects the same."""
        read_only = member.get("read_only_tools")  # None in a snapshot of before, or when the claims stand
        key = (
            member["service"]["hash"],
            tuple(member["include"]),
            tuple(member["exclude"]),
            member["tool_prefix"],
            output_schemas,
            tuple(read_only) if read_only is not None else None,
        )
        tools = self._tool_sets.get(key)
        if tools is None:
            prefix = member["tool_prefix"]
            operations = served_selection(service.operations, member["include"], member["exclude"], prefix)
            tools = self._tool_sets[key] = ToolSet(decided(operations, read_only, prefix), output_schemas)
        return tools

    def _cross_service(self, organization: str) -> CrossService:
        """How scripts of `organization` reach a tool of another of its services (`Name:version`): through the
        exposition that serves that service, as it is when the call is made, and its call path (its limits)."""

        def find(service: str, tool: str) -> CallTarget | None:
            name, colon, version = service.rpartition(":")
            route = self.routes.by_service.get((organization, name, version)) if colon else None
            handler = route.endpoint.handler if route is not None else None
            if route is None or not isinstance(handler, ExpositionHandler):
                return None
            found = handler.internal_tool(tool)
            if found is not None and route.guard is not OPEN:
                # that exposition checks who calls it; a script of another cannot call it in someone's name
                found = RefusedEntry(found.tool, f"{service} checks who calls it (API key or OAuth): scripts of "
                                     "other expositions cannot call its tools")  # fmt: skip
            return CallTarget(found, handler.calls) if found is not None else None

        return find

    @property
    def cors(self) -> CorsPolicy:
        """The origins whose browser pages may call the MCP endpoints."""
        return CorsPolicy(self._options.security.cors_origins)

    def host_allowed(self, scope: Mapping[str, Any]) -> bool:
        """Whether the request's Host passes the endpoints' DNS-rebinding allow-list."""
        return self._options.security.host_allowed(request_host(scope.get("headers", ())))

    def refused(self, route: Route, scope: Mapping[str, Any], refusal: Refusal) -> None:
        """A request the route's guard turned away (its door observers hear of it)."""
        for observer in route.door:
            observer.refused(refusal.reason, refusal.status, _client(scope), scope["path"])

    def rate_limited(
        self, route: Route, scope: Mapping[str, Any], caller: Caller | None, refused: Refused, messages: int = 1
    ) -> None:
        """A request the route's rate limits refused, 429, or `messages` messages of a batch it carried (its door
        observers hear of it)."""
        user = caller.principal if caller is not None else None
        for observer in route.door:
            observer.limited(refused.reason, refused.retry_after, _client(scope), scope["path"], user, messages)

    def shutdown(self) -> None:
        for _, route in self._built.values():
            route.endpoint.shutdown()

    async def close(self) -> None:
        """End every stream, then close the connections backends hold."""
        self.shutdown()
        if self._scripts is not None:
            self._scripts.close()
        self.shaping.close()
        await self._backends.close()
