"""grpc.aio channels, shared by every gRPC backend of a gateway: one per target and TLS setting.

A channel multiplexes any number of concurrent calls over HTTP/2, so opening
one per call (as reShapr does) only adds handshakes. Channels are created on
first use, inside the event loop that will use them.

A channel is opened (`open`) once its target's hosts are checked: none may be, or
resolve to, a cloud metadata address. grpc resolves names itself, later and again,
so this checks the name of the moment; it does not pin the addresses.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from dataclasses import dataclass

import grpc
import grpc.aio

from apimcp.backends.targets import grpc_hosts
from apimcp.backends.tls import TlsSettings
from apimcp.safety.addresses import ANYTHING_BUT_METADATA, Resolve, system_resolve
from apimcp.safety.resolver import checked_addresses

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
RETIRED_GRACE_SECONDS = 30.0


GrpcTls = TlsSettings  # the backends' TLS settings, as gRPC channels take them


@dataclass(frozen=True, slots=True)
class Target:
    address: str
    """What grpc dials: host:port (or any grpc target name such as dns:///host:port)."""
    secure: bool


def parse_target(target: str, tls: GrpcTls | None = None) -> Target:
    """`host:port` and `grpc://host:port` are plaintext, `grpcs://host:port` is TLS; any of them is TLS when
    `tls` is configured (a CA or a client certificate only makes sense over TLS)."""
    scheme, _, rest = target.partition("://")
    if not rest:
        address, secure = target, False
    elif scheme in ("grpc", "grpcs"):
        address, secure = urllib.parse.urlsplit(target).netloc, scheme == "grpcs"
    elif scheme in ("dns", "unix", "ipv4", "ipv6"):
        address, secure = target, False
    else:
        raise ValueError(f"a gRPC target looks like host:port, grpc://host:port or grpcs://host:port, not {target!r}")
    if not address:
        raise ValueError(f"the gRPC target {target!r} names no host")
    return Target(address, secure or tls is not None)


ChannelKey = tuple[Target, GrpcTls | None]


class GrpcChannels:
    """The channels of one gateway, by (address, TLS); `close()` closes them all."""

    def __init__(
        self, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, resolve: Resolve = system_resolve
    ) -> None:
        """`resolve`: how the hosts of targets resolve when their channel is opened (tests map names)."""
        self._resolve = resolve
        self._options = (
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
        )
        self._channels: dict[ChannelKey, grpc.aio.Channel] = {}
        self._closing: set[asyncio.Task[None]] = set()

    @staticmethod
    def key(target: Target, tls: GrpcTls | None) -> ChannelKey:
        return (target, tls if target.secure else None)

    def opened(self, target: Target, tls: GrpcTls | None = None) -> grpc.aio.Channel | None:
        """The channel already open for `target`, if any (no work: a dictionary lookup)."""
        return self._channels.get(self.key(target, tls))

    async def open(self, target: Target, tls: GrpcTls | None = None) -> grpc.aio.Channel:
        """The channel for `target`, opened once its hosts are checked: AddressRefused when one is or resolves to a
        cloud metadata address, OSError when a name does not resolve."""
        channel = self.opened(target, tls)
        if channel is None:
            for host, port in grpc_hosts(target.address):
                await checked_addresses(host, port, ANYTHING_BUT_METADATA, self._resolve)
            channel = self.get(target, tls)
        return channel

    def get(self, target: Target, tls: GrpcTls | None = None) -> grpc.aio.Channel:
        """The channel for `target`, opened without checking its hosts (backends call `open`)."""
        key = self.key(target, tls)
        channel = self._channels.get(key)
        if channel is None:
            channel = self._open(target, tls)
            self._channels[key] = channel
        return channel

    def _open(self, target: Target, tls: GrpcTls | None) -> grpc.aio.Channel:
        if not target.secure:
            return grpc.aio.insecure_channel(target.address, options=self._options)
        tls = tls or GrpcTls()
        credentials = grpc.ssl_channel_credentials(
            root_certificates=tls.ca_pem, private_key=tls.client_key_pem, certificate_chain=tls.client_cert_pem
        )
        return grpc.aio.secure_channel(target.address, credentials, options=self._options)

    def __len__(self) -> int:
        return len(self._channels)

    def retain(self, used: set[ChannelKey], grace_seconds: float = RETIRED_GRACE_SECONDS) -> None:
        """Close, in the background, the channels no backend uses any more (a changed target or a rotated
        certificate); calls still running on them get `grace_seconds` to finish."""
        retired = [key for key in self._channels if key not in used]
        if not retired:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # not serving (yet): nothing can be running on them, and close() will get them
        for key in retired:
            channel = self._channels.pop(key)
            task = loop.create_task(channel.close(grace=grace_seconds))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        channels = list(self._channels.values())
        self._channels.clear()
        for channel in channels:
            await channel.close()
        for task in list(self._closing):
            await task
