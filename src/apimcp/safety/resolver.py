"""An aiohttp resolver that applies the address policy, for async requests made on someone's behalf.

aiohttp connects to the addresses its resolver returns, so a resolver that checks
them is also proof against DNS rebinding: what was checked is what is connected to,
and TLS still verifies the name. It sees host names only: a URL whose host is an
address must be checked by whoever makes the request (`check_literal_host`).

Lookups run on a small pool of their own (`checked_addresses`): getaddrinfo has no
timeout, and lookups stuck on a slow name server must not hold the threads of the
loop's default executor, which the rest of the server uses.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import socket
from ipaddress import IPv4Address

from aiohttp.abc import AbstractResolver, ResolveResult

from apimcp.safety.addresses import (
    AddressPolicy,
    IPAddress,
    Resolve,
    allowed_addresses,
    parse_address,
    system_resolve,
)

_NUMERIC = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV
LOOKUP_THREADS = 8
_LOOKUPS = concurrent.futures.ThreadPoolExecutor(max_workers=LOOKUP_THREADS, thread_name_prefix="apimcp-lookup")


async def checked_addresses(host: str, port: int, policy: AddressPolicy, resolve: Resolve) -> list[IPAddress]:
    """`allowed_addresses`, resolved on the lookup pool (at most `LOOKUP_THREADS` at once; more wait their turn).
    Cancelling the wait drops a lookup that has not started."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_LOOKUPS, allowed_addresses, host, port, policy, resolve)


class PolicyResolver(AbstractResolver):
    """Resolves with `resolve` (on the lookup pool) and refuses, with AddressRefused, a name leading to an
    address the policy refuses."""

    def __init__(self, policy: AddressPolicy, resolve: Resolve = system_resolve) -> None:
        self._policy = policy
        self._resolve = resolve

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addresses = await checked_addresses(host, port, self._policy, self._resolve)
        results: list[ResolveResult] = []
        for address in addresses:
            kind = socket.AF_INET if isinstance(address, IPv4Address) else socket.AF_INET6
            if family in (socket.AF_UNSPEC, kind):
                results.append(
                    ResolveResult(hostname=host, host=str(address), port=port, family=kind, proto=0, flags=_NUMERIC)
                )
        if not results:
            raise OSError(f"{host} has no address of the family asked for")
        return results

    async def close(self) -> None:
        pass


def check_literal_host(policy: AddressPolicy, host: str | None) -> None:
    """Refuse (AddressRefused) a URL host written as an address the policy refuses: aiohttp connects to such
    a host without asking its resolver."""
    address = parse_address(host or "")
    if address is not None:
        policy.check(host or "", [address])
