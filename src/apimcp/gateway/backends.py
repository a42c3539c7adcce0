"""From a snapshot member to the backend that calls its service: REST, GraphQL, gRPC or an MCP server.

This is the one place the gateway looks at a service's kind. The connections
backends share live here too: the aiohttp session (REST, GraphQL) and the gRPC
channels, opened on first use and closed with the gateway. OAuth token requests
have a session of their own, which reaches only what the fetch policy allows: a
token URL is fetched on the plan owner's behalf, while backends are the endpoints
the plan chose and may well be internal (never a cloud metadata address: the
session's resolver, `rest.new_session`, and the gRPC channels refuse those).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import aiohttp

from apimcp.backends.access import AnyCredentials
from apimcp.backends.base import Backend
from apimcp.backends.credentials import ApiKey, Basic, Bearer, Credentials
from apimcp.backends.graphql import GraphQLBackend
from apimcp.backends.grpc import GrpcBackend, GrpcChannels
from apimcp.backends.grpc_messages import Messages
from apimcp.backends.oauth_client import ClientCredentials, TokenSession
from apimcp.backends.oauth_http import SharedValues
from apimcp.backends.rest import DEFAULT_MAX_RESPONSE_BYTES, RestBackend
from apimcp.backends.secret_refs import reference_problem
from apimcp.backends.tls import TlsSettings
from apimcp.backends.token_exchange import ACCESS_TOKEN, TokenExchange
from apimcp.catalog.model import Service
from apimcp.federation.backend import McpBackend
from apimcp.federation.stdio_channel import StdioCommand
from apimcp.safety.addresses import AddressPolicy, Resolve, system_resolve
from apimcp.shaping.limits import DEFAULT_LARGE_FROM_BYTES

PER_USER_KINDS = ("user_token", "user_oauth", "oauth_token_exchange")
"""Credentials a call gets for the user it is made for (`gateway.call_preparation`), never the backend's own."""


def credential_list(raw: Sequence[Mapping[str, Any]] | Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """A member's credentials as a list of `{kind, fields, values}` (a single object or null from older control
    planes)."""
    if raw is None:
        return []
    return [raw] if isinstance(raw, Mapping) else list(raw)


def check_references(raw: Sequence[Mapping[str, Any]] | Mapping[str, Any] | None, organization: str) -> None:
    """Refuse credentials of `organization` whose values name variables it may not read (`secret_refs`): the
    control plane checks them when they are written, a gateway again before it serves them."""
    for credential in credential_list(raw):
        for name, value in (credential.get("values") or {}).items():
            problem = reference_problem(value, organization) if isinstance(value, str) else None
            if problem is not None:
                raise ValueError(f"credential {credential.get('name') or credential['kind']} ({name}): {problem}")


def credentials_of(raw: Sequence[Mapping[str, Any]] | Mapping[str, Any] | None) -> list[AnyCredentials]:
    """The credentials every call of a member carries (per-user ones are not among them)."""
    return [_credential(item) for item in credential_list(raw) if item["kind"] not in PER_USER_KINDS]


def _credential(raw: Mapping[str, Any]) -> Credentials | ClientCredentials:
    kind, fields, values = raw["kind"], raw["fields"], raw["values"]
    if kind == "bearer":
        return Bearer(values["token"])
    if kind == "basic":
        return Basic(fields["username"], values["password"])
    if kind == "api_key":
        return ApiKey(fields["name"], values["value"], fields.get("location", "header"))
    if kind == "oauth_client_credentials":
        return ClientCredentials(
            token_url=fields["token_url"],
            client_id=fields["client_id"],
            client_secret=values["client_secret"],
            scopes=tuple(fields.get("scopes") or ()),
            audience=fields.get("audience"),
        )
    raise ValueError(f"unknown credential kind {kind!r}")


def token_exchange_of(raw: Mapping[str, Any]) -> TokenExchange:
    """An `oauth_token_exchange` credential of a snapshot."""
    fields, values = raw["fields"], raw["values"]
    return TokenExchange(
        token_url=fields["token_url"],
        client_id=fields["client_id"],
        client_secret=values["client_secret"],
        audience=fields.get("audience"),
        resource=fields.get("resource"),
        scopes=tuple(fields.get("scopes") or ()),
        subject_token_type=fields.get("subject_token_type") or ACCESS_TOKEN,
        requested_token_type=fields.get("requested_token_type"),
        header=fields.get("header") or "Authorization",
    )


def tls_of(raw: Mapping[str, Any] | None) -> TlsSettings | None:
    """TLS settings of a member (PEM texts); None when the member has none."""
    if not raw:
        return None

    def pem(key: str) -> bytes | None:
        value = raw.get(key)
        return value.encode() if isinstance(value, str) and value else None

    return TlsSettings(ca_pem=pem("ca"), client_cert_pem=pem("certificate"), client_key_pem=pem("private_key"))


class BackendFactory:
    """Builds backends for snapshot members, over connections shared by the whole gateway."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        fetch_policy: AddressPolicy | None = None,
        resolve: Resolve = system_resolve,
        shared_tokens: SharedValues | None = None,
        large_from_bytes: int = DEFAULT_LARGE_FROM_BYTES,
        commands: Mapping[str, StdioCommand] | None = None,
    ) -> None:
        """`shared_tokens`: where backend access tokens are kept for every replica (the state's user values);
        `large_from_bytes`: REST and GraphQL answers at least this large are given back unparsed; `commands`:
        how to start the stdio MCP servers of an operator's configuration file, by service id (a snapshot never
        carries a command: it may come from elsewhere)."""
        self._commands = dict(commands or {})
        self.on_list_changed: Callable[[str, str], None] | None = None
        """Told `(service id, list)` when an MCP server says one of its lists changed (the runtime listens)."""
        self._session = session
        self._large_from_bytes = large_from_bytes
        self._token_session = TokenSession(fetch_policy, resolve, shared_tokens)
        self._resolve = resolve
        self._channels: GrpcChannels | None = None
        self._messages: dict[int, tuple[Service, Messages]] = {}
        """Message classes per gRPC service (by identity: the runtime decodes each service once)."""
        self._upstreams: list[McpBackend] = []
        """MCP servers' backends, which hold upstream sessions to end when they are no longer served."""
        self._closing: set[asyncio.Task[None]] = set()

    @property
    def guarded_session(self) -> TokenSession:
        """The session for URLs that come from users' files (token endpoints, remote resource contents): it
        reaches only what the fetch policy allows."""
        return self._token_session

    def build(self, service: Service, member: Mapping[str, Any]) -> Backend:
        credentials = credentials_of(member["credentials"])
        timeout = member["backend_timeout_ms"] / 1000
        max_bytes = member.get("max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES)
        endpoint = member["backend_endpoint"]
        tls = tls_of(member.get("backend_tls"))
        if service.kind == "grpc":
            if self._channels is None:
                self._channels = GrpcChannels(resolve=self._resolve)
            return GrpcBackend(
                service,
                self._channels,
                messages=self._messages_of(service),
                target=endpoint,
                tls=tls,
                credentials=credentials,
                oauth_session=self._token_session,
                timeout_seconds=timeout,
                max_response_bytes=max_bytes,
            )
        if service.kind == "mcp":
            command = self._commands.get(member["service"]["id"])
            if command is None and service.servers and service.servers[0].url.startswith("stdio:"):
                raise ValueError(f"service {service.name!r} is a stdio server, started only from a configuration file")
            upstream = McpBackend(
                service,
                self._session,
                endpoint=endpoint,
                credentials=credentials,
                timeout_seconds=timeout,
                max_response_bytes=max_bytes,
                tls=tls,
                oauth_session=self._token_session,
                command=command,
            )
            service_id = upstream.service_id = member["service"]["id"]
            upstream.upstream.routes.lists_changed.append(lambda kind: self._list_changed(service_id, kind))
            self._upstreams.append(upstream)
            return upstream
        if service.kind == "graphql":
            return GraphQLBackend(
                service,
                self._session,
                endpoint=endpoint,
                credentials=credentials,
                timeout_seconds=timeout,
                max_response_bytes=max_bytes,
                tls=tls,
                oauth_session=self._token_session,
                large_from_bytes=self._large_from_bytes,
            )
        return RestBackend(
            service,
            self._session,
            base_url=endpoint,
            credentials=credentials,
            timeout_seconds=timeout,
            max_response_bytes=max_bytes,
            tls=tls,
            oauth_session=self._token_session,
            large_from_bytes=self._large_from_bytes,
        )

    def _list_changed(self, service_id: str, kind: str) -> None:
        if self.on_list_changed is not None:
            self.on_list_changed(service_id, kind)

    def _messages_of(self, service: Service) -> Messages:
        entry = self._messages.get(id(service))
        if entry is None or entry[0] is not service:
            entry = self._messages[id(service)] = (service, Messages(service))
        return entry[1]

    def retain(self, backends: Iterable[Backend]) -> None:
        """Let go of what none of `backends` (everything now served) uses: connections, message classes, upstream
        MCP sessions."""
        backends = list(backends)
        grpc_backends = [b for b in backends if isinstance(b, GrpcBackend)]
        if self._channels is not None:
            self._channels.retain({b.channel_key for b in grpc_backends})
        used = {id(b.messages) for b in grpc_backends}
        self._messages = {key: entry for key, entry in self._messages.items() if id(entry[1]) in used}
        served = {id(b) for b in backends}
        dropped = [b for b in self._upstreams if id(b) not in served]
        self._upstreams = [b for b in self._upstreams if id(b) in served]
        for upstream in dropped:  # their sessions ended in the background: retain is called between snapshots
            task = asyncio.get_running_loop().create_task(upstream.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        """Close the gRPC channels and the token session (the backends' aiohttp session belongs to whoever
        created it)."""
        await self._token_session.close()
        upstreams, self._upstreams = self._upstreams, []
        for upstream in upstreams:
            await upstream.close()
        if self._channels is not None:
            channels, self._channels = self._channels, None
            await channels.close()
