"""`apimcp serve`, `control-plane`, `gateway` and `demo`: the processes apimcp runs."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import re
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from apimcp import __version__
from apimcp.cli import context, output
from apimcp.cli.common import EXIT_USAGE, fail, pairs
from apimcp.cli.transport_options import (
    AllowHttp,
    ControlPlaneCa,
    KeyFile,
    TlsCert,
    TlsKey,
    check_control_plane_url,
    gateway_key,
    server_tls,
    trusted_ca,
)

if TYPE_CHECKING:  # the gateway, the database layer and uvicorn load only for the command that runs them
    from collections.abc import Callable, Coroutine

    from apimcp.control.plane import ControlPlane
    from apimcp.embedded import Started
    from apimcp.gateway.app import GatewayApp
    from apimcp.gateway.plan import GatewayPlan
    from apimcp.protocol import EndpointOptions
    from apimcp.safety.addresses import AddressPolicy
    from apimcp.servers.tls import ServerTls
    from apimcp.settings import Settings
    from apimcp.state.backend import OpenedState

REQUEST_STATE_KEYS_VARIABLE = "APIMCP_REQUEST_STATE_KEYS"
GATEWAY_TOKEN_VARIABLE = "APIMCP_GATEWAY_TOKEN"

Host = Annotated[str, typer.Option(help="Interface to listen on.")]
AllowedHosts = Annotated[
    list[str], typer.Option("--allowed-host", help="A host name clients use besides loopback (DNS-rebinding guard).")
]
CorsOrigins = Annotated[
    list[str],
    typer.Option(
        "--cors-origin",
        help="An origin (https://app.example.com) whose browser pages may call the MCP endpoints (CORS); "
        "repeat for several (default: none; a gateway following a control plane also allows the control plane's "
        "origin, where its web console runs).",
    ),
]
StateUrl = Annotated[
    str | None,
    typer.Option(
        envvar="APIMCP_STATE_URL",
        help="Where sessions and users' credentials live, shared by replicas: redis://, rediss://, "
        "redis+sentinel://host:26379/name or redis+cluster://host:port (needs APIMCP_STATE_KEY; default: memory).",
    ),
]
Workers = Annotated[
    int,
    typer.Option(
        min=1,
        max=64,
        help="Processes serving the port (one per core, say); above 1 needs a shared state (--state-url).",
    ),
]
PublicUrl = Annotated[
    str | None,
    typer.Option(
        envvar="APIMCP_PUBLIC_URL",
        help="The origin clients reach this server at (https://mcp.example.com): OAuth resource identifiers and "
        "elicitation links are built on it (default: each request's scheme and Host); user_oauth connections need it "
        "unless the gateway is reached on loopback.",
    ),
]
DataDir = Annotated[
    Path | None, typer.Option(help="Where the database and keys live (default: $APIMCP_HOME or ~/.local/share/apimcp).")
]
FetchAllow = Annotated[
    list[str],
    typer.Option(
        "--fetch-allow",
        envvar="APIMCP_FETCH_ALLOW",
        metavar="HOST|*.SUFFIX|CIDR",
        help="An internal host imports, $refs and OAuth token requests may reach (by default only public addresses "
        "are fetched on someone's behalf); repeatable; the variable takes a comma-separated list.",
        show_default=False,
    ),
]
ForwardedAllowIps = Annotated[
    str | None,
    typer.Option(
        "--forwarded-allow-ips",
        metavar="IP|CIDR[,...]|*",
        help="The proxies in front (addresses, CIDR networks, comma-separated; * for any peer) whose X-Forwarded-For "
        "and X-Forwarded-Proto say a request's client address and scheme (default: $APIMCP_FORWARDED_ALLOW_IPS, "
        "else none: each request is from its peer).",
        show_default=False,
    ),
]
DatabaseUrl = Annotated[
    str | None,
    typer.Option(
        envvar="APIMCP_DATABASE_URL", help="A PostgreSQL URL, e.g. postgresql://user@host/db (default: SQLite)."
    ),
]


def public_base(host: str, port: int, tls: ServerTls | None = None) -> str:
    shown = "localhost" if host in ("127.0.0.1", "0.0.0.0", "::", "::1") else host
    return f"{'https' if tls is not None else 'http'}://{shown}:{port}"


def client_hints(base_url: str, endpoints: dict[str, str]) -> str:
    """What to tell a user about reaching the endpoints, with a ready-to-paste client configuration."""
    lines = [f"MCP endpoint {base_url}{path}" for path in endpoints.values()]
    servers = {f"apimcp-{name}": {"type": "http", "url": base_url + path} for name, path in endpoints.items()}
    lines.append("Speaks MCP 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25 (sessions) and 2026-07-28 (stateless).")
    if servers:
        lines.append("Client configuration (e.g. an MCP client's mcp.json):")
        lines.append(output.json_text({"mcpServers": servers}))
    return "\n".join(lines)


def run_async(main: Coroutine[object, object, None]) -> None:
    from apimcp.servers.event_loop import run_async as run  # noqa: PLC0415

    run(main)


def settings(forwarded_allow_ips: str | None = None) -> Settings:
    """The limits `APIMCP_*` variables set (docs/security.md), and the proxies `--forwarded-allow-ips` names
    instead of `APIMCP_FORWARDED_ALLOW_IPS`; a wrong one is a usage error naming it."""
    from apimcp.servers.forwarded_headers import ForwardedHeaders  # noqa: PLC0415
    from apimcp.settings import SettingsError, from_environment  # noqa: PLC0415

    try:
        limits = from_environment()
    except SettingsError as exc:
        fail(str(exc), EXIT_USAGE)
    if forwarded_allow_ips is not None:
        try:
            limits = dataclasses.replace(limits, forwarded=ForwardedHeaders(forwarded_allow_ips))
        except ValueError as exc:
            fail(f"--forwarded-allow-ips: {exc}", EXIT_USAGE)
    _install_telemetry()
    return limits


def _install_telemetry() -> None:
    """Spans and metrics as the `OTEL_*` and `APIMCP_METRICS*` variables ask (docs/telemetry.md); off without them."""
    from apimcp.telemetry import Telemetry, install  # noqa: PLC0415
    from apimcp.telemetry.config import TelemetryConfigError  # noqa: PLC0415

    try:
        install(Telemetry.from_environment(os.environ))
    except TelemetryConfigError as exc:
        fail(str(exc), EXIT_USAGE)


def shared_state(state_url: str | None, limits: Settings) -> OpenedState:
    """The stores and relay `--state-url` / APIMCP_STATE_URL name (this process's memory without one)."""
    from apimcp.state.backend import StateConfig, open_state  # noqa: PLC0415
    from apimcp.state.redis_connection import StateUrlError  # noqa: PLC0415

    try:
        return open_state(StateConfig.from_environment(state_url), limits.sessions, limits.tasks)
    except StateUrlError as exc:
        fail(str(exc), EXIT_USAGE)


def endpoint_options(
    allowed_hosts: list[str], limits: Settings, state: OpenedState | None = None, cors_origins: Sequence[str] = ()
) -> EndpointOptions:
    """Options for gateways that run from the command line; requestState keys come from the environment."""
    from apimcp.protocol import (  # noqa: PLC0415
        NO_RELAY,
        EndpointOptions,
        MemoryEventStore,
        MemorySessionStore,
        RequestStateSealer,
        TransportSecurity,
    )
    from apimcp.protocol.tasks.store import MemoryTaskStore  # noqa: PLC0415

    raw = os.environ.get(REQUEST_STATE_KEYS_VARIABLE, "")
    keys = [key.strip().encode() for key in raw.split(",") if key.strip()]
    try:
        sealer = RequestStateSealer(keys or None, used=state.used_states if state is not None else None)
    except ValueError as exc:  # a key too short
        fail(f"{REQUEST_STATE_KEYS_VARIABLE}: {exc}", EXIT_USAGE)
    return EndpointOptions(
        security=TransportSecurity.for_hosts(allowed_hosts, cors_origins),
        request_state=sealer,
        limits=limits.mcp,
        sessions=state.sessions if state is not None else MemorySessionStore.with_limits(limits.sessions),
        relay=state.relay if state is not None else NO_RELAY,
        events=state.events if state is not None else MemoryEventStore(),
        tasks=state.tasks if state is not None else MemoryTaskStore(limits.tasks),
    )


def fetch_allow_entries(values: list[str]) -> list[str]:
    """Allow-list entries from repeated options or the variable's comma-separated list."""
    return [entry.strip() for value in values for entry in value.split(",") if entry.strip()]


def fetch_policy(values: list[str]) -> AddressPolicy:
    from apimcp.safety.addresses import AddressPolicy  # noqa: PLC0415

    try:
        return AddressPolicy.allowing(fetch_allow_entries(values))
    except ValueError as exc:
        fail(f"--fetch-allow: {exc}", EXIT_USAGE)


def _log_to_stderr() -> None:
    """apimcp's own messages (sync, errors) with time and level; uvicorn keeps its own format."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("alembic").setLevel(logging.WARNING)


def _data_dir(data_dir: Path | None) -> Path:
    from apimcp.control.store import default_data_dir  # noqa: PLC0415 - the database layer loads only when used

    return data_dir or default_data_dir()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:64] or "api"


def serve(
    config: Annotated[Path | None, typer.Argument(help="A YAML configuration (see docs/configuration.md).")] = None,
    openapi: Annotated[
        str | None, typer.Option(help="Serve one OpenAPI description (path or URL), no database.")
    ] = None,
    backend: Annotated[str | None, typer.Option(help="The API's base URL (with --openapi).")] = None,
    name: Annotated[
        str | None, typer.Option(help="The exposition name (with --openapi; default: from the title).")
    ] = None,
    include: Annotated[list[str], typer.Option(help="With --openapi: only these operations.")] = [],
    exclude: Annotated[list[str], typer.Option(help="With --openapi: not these operations.")] = [],
    host: Annotated[str | None, typer.Option(help="Interface to listen on (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on (default 8080).")] = None,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
    allowed_host: AllowedHosts = [],
    cors_origin: CorsOrigins = [],
    tls_cert: TlsCert = None,
    tls_key: TlsKey = None,
    fetch_allow: FetchAllow = [],
    public_url: PublicUrl = None,
    state_url: StateUrl = None,
    workers: Workers = 1,
    forwarded_allow_ips: ForwardedAllowIps = None,
) -> None:
    """Run apimcp: control plane + gateway in one process (default), or a gateway for a config file.

    Without arguments the control plane's API (/api/v1) and the gateway (/mcp/...) share one port and
    keep their data in SQLite under the data directory; manage it with `apimcp import`, `plan`, `expo`.
    With a configuration file or --openapi, the gateway serves just that, with no database.
    """
    if config is not None and openapi is not None:
        fail("give a configuration file or --openapi, not both", EXIT_USAGE)
    tls = server_tls(tls_cert, tls_key)
    limits = settings(forwarded_allow_ips)
    stores = shared_state(state_url, limits)
    if config is None and openapi is None:
        if backend or name or include or exclude:
            fail("--backend, --name, --include and --exclude go with --openapi", EXIT_USAGE)
        if workers > 1:
            fail(
                "--workers goes with a configuration file or --openapi; with a database, run `apimcp control-plane` "
                "and `apimcp gateway --workers N`",
                EXIT_USAGE,
            )
        _serve_embedded(
            host or "127.0.0.1",
            8080 if port is None else port,
            _data_dir(data_dir),
            database_url,
            allowed_host,
            checked_origins(cors_origin),
            tls,
            fetch_policy(fetch_allow),
            limits,
            public_url,
            stores,
        )
        return
    from apimcp.gateway.config import ConfigError, GatewayConfig, load_config  # noqa: PLC0415
    from apimcp.gateway.plan import plan_gateway  # noqa: PLC0415

    try:
        if config is not None:
            gateway_config = load_config(config, limits.yaml)
        else:
            gateway_config = GatewayConfig.of_options(openapi or "", backend, tuple(include), tuple(exclude))
        given = (("host", host), ("port", port), ("public_url", public_url))
        overrides: dict[str, object] = {k: v for k, v in given if v is not None}
        if allowed_host:
            overrides["allowed_hosts"] = (*gateway_config.server.allowed_hosts, *allowed_host)
        if cors_origin:
            overrides["cors_origins"] = (*gateway_config.server.cors_origins, *checked_origins(cors_origin))
        if fetch_allow:
            fetch_policy(fetch_allow)  # a wrong entry is a usage error that names the option
            overrides["fetch_allow"] = (*gateway_config.server.fetch_allow, *fetch_allow_entries(fetch_allow))
        if overrides:
            server = gateway_config.server.model_copy(update=overrides)
            gateway_config = gateway_config.model_copy(update={"server": server})
        plan = plan_gateway(
            gateway_config, fetch_limits=limits.fetch, yaml_limits=limits.yaml, schema_limits=limits.schema
        )
    except (ConfigError, ValueError) as exc:  # ValueError: pydantic validation of command-line values
        fail(str(exc), EXIT_USAGE)
    if openapi is not None:
        plan = _renamed(plan, name or _slug(plan.services["api"].service.name))
    serve_on = (gateway_config.server.host, gateway_config.server.port)
    on_workers(workers, *serve_on, stores, lambda: run_plan(plan, *serve_on, tls, limits, stores))


def first_worker() -> bool:
    """Whether this process speaks for the others (the only one, or the first of `--workers`)."""
    return os.environ.get("APIMCP_WORKER", "0") == "0"


def on_workers(workers: int, host: str, port: int, state: OpenedState, run: Callable[[], None]) -> None:
    """`run` in this process, or in `workers` processes sharing host:port (and the state store)."""
    if workers == 1:
        run()
        return
    if not state.relay.shared:
        fail(
            "--workers above 1 needs a shared state (--state-url or APIMCP_STATE_URL): every worker must see "
            "every session",
            EXIT_USAGE,
        )
    from apimcp.servers.workers import run_workers  # noqa: PLC0415

    _log_to_stderr()
    try:
        code = run_workers(workers, host, port, lambda: _flushing_telemetry(run))
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror}")
    raise typer.Exit(code)


def _flushing_telemetry(run: Callable[[], None]) -> None:
    """`run`, then the spans still queued are sent: a worker ends with `os._exit`, which runs no `atexit`."""
    from apimcp.telemetry import flush  # noqa: PLC0415

    try:
        run()
    finally:
        flush()


def _renamed(plan: GatewayPlan, name: str) -> GatewayPlan:
    (only,) = plan.expositions
    return dataclasses.replace(plan, expositions=(type(only)(name, only.config, only.services),))


def run_plan(
    plan: GatewayPlan,
    host: str,
    port: int,
    tls: ServerTls | None,
    limits: Settings,
    stores: OpenedState | None = None,
) -> None:
    _log_to_stderr()
    for key, planned in plan.services.items():  # what the importer repaired or left out of a description
        for warning in planned.service.warnings:
            logging.getLogger("apimcp.import").warning("service %r: %s", key, warning)
    from apimcp.gateway.declared import endpoint_options as configured_options  # noqa: PLC0415
    from apimcp.gateway.serve import serve_gateway  # noqa: PLC0415

    def ready(gateway: GatewayApp) -> None:
        if first_worker():
            typer.echo(client_hints(public_base(host, port, tls), gateway.endpoints()))
            typer.echo("Press Ctrl-C to stop.")

    options = configured_options(plan, limits.mcp, limits.sessions, stores)
    run_async(
        serve_gateway(
            plan,
            host=host,
            port=port,
            on_ready=ready,
            tls=tls,
            head_limits=limits.head,
            forwarded=limits.forwarded,
            options=options,
            script_limits=limits.scripts,
            code_limits=limits.code_mode,
            state=stores.stores if stores else None,
            filter_limits=limits.filters,
            shaping_limits=limits.shaping,
        )
    )


def _announce(started: Started, base: str) -> None:
    typer.echo(f"apimcp {__version__}: control plane and gateway on {base} (data in {started.data_dir})")
    typer.echo(f"  REST API {base}/api/v1 (OpenAPI at {base}/api/v1/openapi.json), web console {base}/console/")
    if started.bootstrap_token is not None:
        saved = _save_first_context(base, started.bootstrap_token)
        typer.echo(f"  First start: organization 'default' created; its first token is in {started.bootstrap_file}")
        if saved is not None:
            typer.echo(f"  The CLI is logged in (context {saved}): try `apimcp import <openapi file> --backend <url>`")
    else:
        from apimcp.control.setup import BOOTSTRAP_TOKEN_FILE  # noqa: PLC0415

        followed = context.follow(base, started.data_dir / BOOTSTRAP_TOKEN_FILE)
        if followed is not None:
            typer.echo(f"  The CLI, logged in with the first token, now uses {base} (context {followed})")
    typer.echo(client_hints(base, started.app.gateway.endpoints()))
    typer.echo("Press Ctrl-C to stop.")


def _serve_embedded(
    host: str,
    port: int,
    data_dir: Path,
    database_url: str | None,
    allowed_hosts: list[str],
    cors_origins: list[str],
    tls: ServerTls | None,
    policy: AddressPolicy,
    limits: Settings,
    public_url: str | None,
    stores: OpenedState,
) -> None:
    _log_to_stderr()
    from apimcp.demo import bookshelf_api, follow, record_backend, recorded_backend  # noqa: PLC0415
    from apimcp.embedded import serve_embedded  # noqa: PLC0415 - loads the database layer

    base = public_base(host, port, tls)
    options = endpoint_options(allowed_hosts, limits, stores, cors_origins)

    async def main(prepare: Callable[[ControlPlane], None] | None = None, told: Sequence[str] = ()) -> None:
        def ready(started: Started) -> None:
            for line in told:
                typer.echo(line)
            _announce(started, base)

        await serve_embedded(
            data_dir,
            database_url=database_url,
            options=options,
            host=host,
            port=port,
            prepare=prepare,
            on_ready=ready,
            tls=tls,
            fetch_policy=policy,
            settings=limits,
            public_url=public_url,
            state=stores.stores,
        )

    async def following_the_demo() -> None:
        """The demo ran on this data: its plans get a Bookshelf API of their own, not the demo's dead port."""
        told: list[str] = []
        async with bookshelf_api() as backend_url:

            def prepare(plane: ControlPlane) -> None:
                followed = follow(plane, recorded_backend(data_dir), backend_url)
                record_backend(data_dir, backend_url if followed else None)  # none left: not started again
                if followed:
                    told.append(f"The demo's Bookshelf API runs at {backend_url} for its plans ({', '.join(followed)})")

            await main(prepare, told)

    demo_ran_here = database_url is None and recorded_backend(data_dir) is not None
    try:
        run_async(following_the_demo() if demo_ran_here else main())
    except ValueError as exc:  # bad key file or key variable
        fail(str(exc))


def _save_first_context(base: str, token: str) -> Path | None:
    """Log the local CLI in with the first token, unless it already has a context."""
    if context.context_path().exists():
        return None
    return context.save(context.Context(base, token, "default"))


def control_plane(
    host: Host = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
    tls_cert: TlsCert = None,
    tls_key: TlsKey = None,
    fetch_allow: FetchAllow = [],
    console_gateway: Annotated[
        list[str],
        typer.Option(
            help="A gateway URL (repeat for several) the web console's try-it panel may call from the browser "
            "(its Content-Security-Policy allows this page's origin only, otherwise); see docs/console.md.",
        ),
    ] = [],
    forwarded_allow_ips: ForwardedAllowIps = None,
) -> None:
    """Run the control plane alone (REST API and gateway sync), for gateways started with `apimcp gateway`."""
    from apimcp.console.headers import gateway_origin  # noqa: PLC0415
    from apimcp.control.serve import serve_control_plane  # noqa: PLC0415
    from apimcp.control.setup import bootstrap, open_plane  # noqa: PLC0415

    tls = server_tls(tls_cert, tls_key)
    policy = fetch_policy(fetch_allow)
    limits = settings(forwarded_allow_ips)
    _log_to_stderr()
    directory = _data_dir(data_dir)
    try:
        plane = open_plane(
            directory,
            database_url,
            limits.api,
            fetch_policy=policy,
            fetch_limits=limits.fetch,
            yaml_limits=limits.yaml,
            schema_limits=limits.schema,
            import_capacity=limits.imports,
        )
    except ValueError as exc:
        fail(str(exc))
    try:
        console_gateways = [gateway_origin(url) for url in console_gateway]
    except ValueError as exc:
        fail(str(exc))
    first = bootstrap(plane, directory)
    base = public_base(host, port, tls)

    def ready() -> None:
        typer.echo(f"apimcp {__version__} control plane on {base}/api/v1 ({_described(database_url, directory)})")
        typer.echo(f"  Web console {base}/console/")
        if first is not None:
            typer.echo(f"  First start: organization 'default' created; its first token is in {first[1]}")
            typer.echo(f'  apimcp login {base} --token "$(cat {first[1]})"')

    run_async(
        serve_control_plane(
            plane,
            host=host,
            port=port,
            tls=tls,
            head_limits=limits.head,
            forwarded=limits.forwarded,
            console_gateways=console_gateways,
            on_listening=ready,
            refresh=limits.upstreams,
        )
    )


def _described(database_url: str | None, directory: Path) -> str:
    if database_url is None:
        return f"SQLite in {directory}"
    return "database " + re.sub(r"//[^@/]*@", "//***@", database_url)  # no password in the output


def gateway(
    ctx: typer.Context,
    control_plane_url: Annotated[
        str | None,
        typer.Option(
            "--control-plane",
            help="The control plane to follow, e.g. http://cp:8080; replicas on one database: http://cp1:8080,http://cp2:8080.",
        ),
    ] = None,
    token: Annotated[
        str | None, typer.Option(help=f"A gateway token (default: ${GATEWAY_TOKEN_VARIABLE}).", show_default=False)
    ] = None,
    name: Annotated[str | None, typer.Option(help="This gateway's name (default: the host name).")] = None,
    label: Annotated[list[str], typer.Option("--label", help="A label NAME=VALUE selecting gateway groups.")] = [],
    host: Host = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8081,
    allowed_host: AllowedHosts = [],
    cors_origin: CorsOrigins = [],
    key_file: KeyFile = None,
    allow_http: AllowHttp = False,
    control_plane_ca: ControlPlaneCa = None,
    tls_cert: TlsCert = None,
    tls_key: TlsKey = None,
    fetch_allow: FetchAllow = [],
    public_url: PublicUrl = None,
    state_url: StateUrl = None,
    workers: Workers = 1,
    forwarded_allow_ips: ForwardedAllowIps = None,
) -> None:
    """Run a gateway that follows a control plane (`apimcp gateway list` lists the registered ones)."""
    if ctx.invoked_subcommand is not None:
        return
    if control_plane_url is None:
        fail("give --control-plane URL (or a subcommand: `apimcp gateway list`)", EXIT_USAGE)
    value = token or os.environ.get(GATEWAY_TOKEN_VARIABLE)
    if not value:
        fail(
            f"give a gateway token: --token or ${GATEWAY_TOKEN_VARIABLE} (`apimcp token create <name> --kind gateway`)",
            EXIT_USAGE,
        )
    policy = fetch_policy(fetch_allow)
    limits = settings(forwarded_allow_ips)
    opened = shared_state(state_url, limits)
    control_planes = [url.strip() for url in control_plane_url.split(",") if url.strip()]
    if not control_planes:
        fail("give --control-plane URL", EXIT_USAGE)
    for url in control_planes:
        check_control_plane_url(url, allow_http)
    key = gateway_key(key_file)
    control_plane_tls = trusted_ca(control_plane_ca, "--control-plane-ca")
    tls = server_tls(tls_cert, tls_key)
    from apimcp.gateway.serve import serve_connected_gateway  # noqa: PLC0415

    _log_to_stderr()
    labels = pairs(label, "--label")
    gateway_name = name or socket.gethostname()
    base = public_base(host, port, tls)

    def ready(_: GatewayApp) -> None:
        if not first_worker():
            return
        typer.echo(
            f"apimcp {__version__} gateway {gateway_name} on {base}, following {', '.join(control_planes)} "
            f"(gateway key {key.public.fingerprint})"
        )
        typer.echo("  MCP endpoints: /mcp/{organization}/{exposition}, /mcp/{id}; GET /healthz shows the revision")

    options = endpoint_options(allowed_host, limits, opened, checked_origins(cors_origin))

    def run() -> None:
        run_async(
            serve_connected_gateway(
                control_planes,
                value,
                key,
                name=gateway_name,
                labels=labels,
                options=options,
                host=host,
                port=port,
                on_ready=ready,
                allow_http=allow_http,
                control_plane_tls=control_plane_tls,
                tls=tls,
                fetch_policy=policy,
                head_limits=limits.head,
                forwarded=limits.forwarded,
                script_limits=limits.scripts,
                code_limits=limits.code_mode,
                public_url=public_url,
                state=opened.stores,
                filter_limits=limits.filters,
                shaping_limits=limits.shaping,
            )
        )

    on_workers(workers, host, port, opened, run)


def demo(
    host: Host = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    data_dir: DataDir = None,
    fetch_allow: FetchAllow = [],
    forwarded_allow_ips: ForwardedAllowIps = None,
) -> None:
    """`apimcp serve` with a demo REST API (a bookshelf) imported and exposed at /mcp/default/bookshelf."""
    policy = fetch_policy(fetch_allow)
    limits = settings(forwarded_allow_ips)
    _log_to_stderr()
    from apimcp.demo import run_demo  # noqa: PLC0415 - the demo's backend is only loaded when asked for
    from apimcp.demo_api import spec_path  # noqa: PLC0415

    base = public_base(host, port)

    def ready(started: Started, backend_url: str) -> None:
        typer.echo(f"Demo: the Bookshelf REST API runs at {backend_url}, described by {spec_path()};")
        typer.echo("  it is imported as service 'bookshelf', with plan 'demo' and exposition 'bookshelf'.")
        _announce(started, base)

    try:
        run_async(
            run_demo(
                _data_dir(data_dir),
                host=host,
                port=port,
                on_ready=ready,
                options=endpoint_options([], limits),
                settings=limits,
                fetch_policy=policy,
            )
        )
    except ValueError as exc:
        fail(str(exc))


def demo_api(
    host: Host = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 9000,
) -> None:
    """Run only the demo Bookshelf REST API (to import and expose it yourself); its description is at /openapi.yaml."""
    from apimcp.demo_api import start  # noqa: PLC0415

    async def main() -> None:
        runner, bound = await start(host, port)
        base = public_base(host, bound)
        typer.echo(f"Bookshelf REST API on {base}, described at {base}/openapi.yaml. Press Ctrl-C to stop.")
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    with contextlib.suppress(KeyboardInterrupt):
        run_async(main())


def checked_origins(origins: Sequence[str]) -> list[str]:
    """`--cors-origin` values, each an origin; a usage error names the one that is not."""
    from apimcp.protocol.cors import normalized_origin  # noqa: PLC0415

    try:
        return [normalized_origin(origin) for origin in origins]
    except ValueError as exc:
        fail(f"--cors-origin: {exc}", EXIT_USAGE)
