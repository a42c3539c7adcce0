"""Which addresses a fetch made on someone's behalf may reach.

A user who names a URL (a description to import, an artifact, a GraphQL endpoint to
introspect, a gRPC server to reflect, a token endpoint) must not make the server
reach what only the server can reach: itself, its private network, a cloud metadata
service. So every address a name resolves to is checked, whatever the spelling of
the name (`127.1`, `2130706433`, `[::ffff:127.0.0.1]` are all loopback once resolved).

Internal addresses are refused unless an allow-list names the host (exactly, or by a
`*.suffix` pattern) or a network holding the address: companies keep descriptions on
internal hosts. Cloud metadata addresses are refused whatever the allow-list says.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolve = Callable[[str, int], Sequence[IPAddress]]
"""How a host name becomes addresses (host, port → addresses); tests give one mapping names to loopback."""

METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(address)
    for address in (
        "169.254.169.254",  # AWS, Google Cloud, Azure, OpenStack, Oracle...
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS instance metadata over IPv6
        "fd20:ce::254",  # Google Cloud instance metadata over IPv6
        "168.63.129.16",  # Azure WireServer: a public address, so nothing else would refuse it
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud (legacy)
    )
)
"""Cloud instance metadata services: they hand out the machine's own credentials. Their IPv6 forms (mapped,
NAT64, 6to4...) are refused too (`is_metadata`)."""

_PRIVATE = tuple(ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"))
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT (RFC 6598)
_NOT_GLOBAL = tuple(
    ipaddress.ip_network(n)
    for n in ("192.0.0.0/24", "198.18.0.0/15", "fec0::/10", "64:ff9b:1::/48")  # some Python versions call these global
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated IPv4-compatible IPv6 (::a.b.c.d)
_HOST_NAME = re.compile(r"^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))*$")

ALLOW_OPTION = "--fetch-allow"
ALLOW_VARIABLE = "APIMCP_FETCH_ALLOW"
ALLOW_SETTING = "server.fetch_allow"


class AddressRefused(Exception):
    """A fetch on someone's behalf would reach an address the policy refuses; the message says which rule
    refused it and how to allow the host."""


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4, Teredo), if it carries one."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64 or (address in _COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def internal_reason(address: IPAddress) -> str | None:
    """What makes `address` internal ("a loopback address"...), or None for a public address."""
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_unspecified:
        return "the unspecified address (it means this machine)"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if isinstance(address, ipaddress.IPv6Address):
        carried = embedded_ipv4(address)
        if carried is not None:
            reason = internal_reason(carried)
            if reason is not None:
                return f"an IPv6 form of {carried}, {reason}"
            if address.ipv4_mapped is not None or address in _NAT64:
                return None  # reaches the public IPv4 address it carries (NAT64 is how IPv6-only hosts do)
    elif address in _SHARED:
        return "a shared address (carrier-grade NAT, 100.64.0.0/10)"
    if any(address in network for network in _PRIVATE):
        return "a private address"
    if address.is_reserved or not address.is_global or any(address in network for network in _NOT_GLOBAL):
        return "a reserved or non-global address"
    return None


def is_metadata(address: IPAddress) -> bool:
    carried = embedded_ipv4(address) if isinstance(address, ipaddress.IPv6Address) else None
    return address in METADATA_ADDRESSES or carried in METADATA_ADDRESSES


def normalized_host(host: str) -> str:
    """A host name as the allow-list compares it: lower case, no trailing dot, no IPv6 brackets."""
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return host.encode("idna").decode("ascii") if not host.isascii() else host
    except UnicodeError:
        return host


def parse_address(host: str) -> IPAddress | None:
    """`host` as an IP address when it is written as one in the usual notation (brackets allowed)."""
    try:
        return ipaddress.ip_address(normalized_host(host))
    except ValueError:
        return None


def how_to_allow(entry: str) -> str:
    return (
        f"the server fetches only public addresses unless its fetch allow-list names the host: start it with "
        f"{ALLOW_OPTION} {entry} (or {ALLOW_VARIABLE}={entry}; in a gateway configuration file, "
        f"{ALLOW_SETTING}: [{entry}])"
    )


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    """The addresses fetches on someone's behalf may reach: public ones, plus what the allow-list names.

    The default policy refuses every internal address. `AddressPolicy.allowing([...])` builds one from
    allow-list entries: host names (`descriptions.corp.example`), `*.suffix` patterns (`*.corp.example`:
    every name below it, not the suffix itself) and CIDR networks or addresses (`10.20.0.0/16`, `127.0.0.1`).
    """

    hosts: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()
    """Each starts with a dot: `.corp.example`."""
    networks: tuple[Network, ...] = ()
    entries: tuple[str, ...] = ()
    """The allow-list as it was written (for messages)."""

    @classmethod
    def allowing(cls, entries: Iterable[str]) -> AddressPolicy:
        """A policy allowing `entries` besides public addresses; ValueError names an entry that is none of
        a host name, a `*.suffix` pattern or a CIDR network."""
        hosts: set[str] = set()
        suffixes: list[str] = []
        networks: list[Network] = []
        written: list[str] = []
        for raw in entries:
            entry = raw.strip()
            if not entry:
                continue
            written.append(entry)
            if "://" in entry:
                host = entry.split("://", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
                raise ValueError(f"fetch allow-list entry {entry!r} is a URL: give its host alone ({host})")
            if "/" in entry:
                try:
                    networks.append(ipaddress.ip_network(normalized_host(entry), strict=False))
                except ValueError:
                    raise ValueError(f"fetch allow-list entry {entry!r} is not a network such as 10.0.0.0/8") from None
                continue
            address = parse_address(entry)
            if address is not None:
                networks.append(ipaddress.ip_network(address))
                continue
            name = normalized_host(entry)
            if name.startswith("*."):
                suffix = name[1:]
                if not _HOST_NAME.fullmatch(suffix[1:]):
                    raise ValueError(f"fetch allow-list entry {entry!r}: '*.' comes before a domain: *.corp.example")
                suffixes.append(suffix)
            elif _HOST_NAME.fullmatch(name):
                hosts.add(name)
            else:
                raise ValueError(
                    f"fetch allow-list entry {entry!r} is not a host name, a *.suffix pattern or a CIDR network"
                )
        return cls(frozenset(hosts), tuple(suffixes), tuple(networks), tuple(written))

    def names_host(self, host: str) -> bool:
        name = normalized_host(host)
        return name in self.hosts or any(name.endswith(suffix) for suffix in self.suffixes)

    def refusal(self, host: str, address: IPAddress) -> str | None:
        """Why a fetch of `host` may not connect to `address` (one of the addresses `host` resolved to);
        None when it may."""
        reason = internal_reason(address)
        if reason is None:
            return None
        name = normalized_host(host)
        literal = parse_address(name) == address
        subject = f"{name} is" if literal else f"{name} resolves to"
        if is_metadata(address):
            return (
                f"{subject} {reason}, which hands out the machine's own credentials: no request made on someone's "
                "behalf reaches it, whatever the allow-list says"
            )
        if self.names_host(host) or any(address in network for network in self.networks):
            return None
        return f"{subject} {reason}; {how_to_allow(name)}"

    def check(self, host: str, addresses: Sequence[IPAddress]) -> None:
        """Refuse (AddressRefused) unless every address `host` resolved to may be reached: a name that
        resolves to one public and one internal address is refused, whichever would be tried first."""
        for address in addresses:
            reason = self.refusal(host, address)
            if reason is not None:
                raise AddressRefused(reason)


ANYTHING_BUT_METADATA = AddressPolicy(
    networks=(ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0")), entries=("0.0.0.0/0", "::/0")
)
"""The policy of backend calls: a plan's backend is the endpoint its author chose and is often internal, but a
cloud metadata address is never a backend (`refusal` refuses it whatever the networks allow)."""


def system_resolve(host: str, port: int) -> list[IPAddress]:
    """The addresses of `host` as the system resolves them (an address written as one is its own answer)."""
    literal = parse_address(host)
    if literal is not None:
        return [literal]
    found: list[IPAddress] = []
    for *_, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        address = ipaddress.ip_address(sockaddr[0])
        if address not in found:
            found.append(address)
    return found


def allowed_addresses(host: str, port: int, policy: AddressPolicy, resolve: Resolve) -> list[IPAddress]:
    """Resolve `host` once and check every address: the caller connects to these and to nothing else, so a
    name that resolves differently a moment later (DNS rebinding) cannot lead elsewhere. OSError when the
    name does not resolve, AddressRefused when the policy refuses an address."""
    addresses = list(resolve(host, port))
    if not addresses:
        raise OSError(f"{host} has no address")
    policy.check(host, addresses)
    return addresses
