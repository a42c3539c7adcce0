"""The guarded fetch: every http(s) request a server makes on someone's behalf from a worker thread.

Importing a description, a `$ref`ed document or an artifact by URL, and asking a GraphQL
endpoint for its schema, all go through `Fetcher.request`, which

- resolves the host once, checks every address against the `AddressPolicy` and connects to a
  checked address (TLS server name and Host header keep the name), so a name that resolves
  elsewhere a moment later (DNS rebinding) leads nowhere new;
- follows redirects by hand, http(s) only, a bounded number of hops, each hop checked like the
  first, credentials dropped as soon as the origin changes;
- gives the whole fetch one deadline (resolving, connecting, every redirect, every byte: a server
  sending a byte now and then cannot hold it longer, nor can a slow name server) and a size cap;
- fails with one uniform text for every network failure, so that refused, reset and timed-out
  connections read the same and the server cannot be used to tell which ports are open.

A URL that cannot be parsed (an unclosed IPv6 bracket, a port out of range) is a `BadUrl`, whoever
parses it: `split_url`, `join_url` and `url_origin` are the URL helpers the importers use too.
"""

from __future__ import annotations

import concurrent.futures
import functools
import http.client
import io
import logging
import socket
import ssl
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apimcp.safety.addresses import AddressPolicy, AddressRefused, IPAddress, Resolve, allowed_addresses, system_resolve
from apimcp.safety.shown_urls import shown_url

log = logging.getLogger("apimcp.safety.fetch")

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_REDIRECTS = 5
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_CHUNK = 64 * 1024
_USER_AGENT = "apimcp-fetch"
_SAFE_IN_PATH = "/%:@!$&'()*+,;=-._~"
_SAFE_IN_QUERY = _SAFE_IN_PATH + "?"
_DEFAULT_PORTS = {"http": 80, "https": 443}
_LOOKUPS = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="apimcp-fetch-lookup")
"""Where fetches resolve names: getaddrinfo has no timeout of its own, so a fetch waits for its lookup only until
its deadline, and a lookup stuck on a slow name server holds one of these threads, no one else's."""


@dataclass(frozen=True, slots=True)
class FetchLimits:
    max_bytes: int = DEFAULT_MAX_BYTES
    """The largest answer accepted (checked on Content-Length, then while reading)."""
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    """One deadline for the whole fetch: resolving, connecting, every redirect, every byte."""
    max_redirects: int = DEFAULT_MAX_REDIRECTS
    """Redirects followed; 0 follows none."""

    def __post_init__(self) -> None:
        if self.max_bytes <= 0 or not self.timeout_seconds > 0 or self.max_redirects < 0:
            raise ValueError("fetch limits must be positive (max_redirects may be 0)")


class FetchError(Exception):
    """A fetch that did not bring an answer; the message says why without naming credentials."""


class FetchRefused(FetchError):
    """The address policy refused the host (or a redirect's host); the message says how to allow it."""


class FetchFailed(FetchError):
    """No complete answer: the one text every network failure gets."""


class ResponseTooLarge(FetchError):
    pass


class BadUrl(FetchError):
    pass


class HttpStatusError(FetchError):
    def __init__(self, response: FetchResponse) -> None:
        super().__init__(f"HTTP {response.status} {response.reason}".rstrip())
        self.response = response


@dataclass(frozen=True, slots=True)
class FetchResponse:
    url: str
    """Where the answer came from (after redirects)."""
    status: int
    reason: str
    headers: Mapping[str, str]
    """Lower-case names."""
    body: bytes = field(repr=False)


@functools.cache
def _system_tls() -> ssl.SSLContext:
    return ssl.create_default_context()


@dataclass(frozen=True, slots=True)
class Fetcher:
    """How fetches on someone's behalf are made: which addresses they may reach, their limits, how names
    resolve (tests map names to loopback addresses) and which certificates TLS trusts (default: the system's)."""

    policy: AddressPolicy = field(default_factory=AddressPolicy)
    limits: FetchLimits = field(default_factory=FetchLimits)
    resolve: Resolve = system_resolve
    tls: ssl.SSLContext | None = None

    def get(self, url: str, *, credentials: Mapping[str, str] | None = None, accept: str = "*/*") -> bytes:
        """The body of a successful (2xx) GET of `url`; anything else is a FetchError."""
        response = self.request("GET", url, headers={"Accept": accept}, credentials=credentials)
        if not 200 <= response.status < 300:
            raise HttpStatusError(response)
        return response.body

    def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        credentials: Mapping[str, str] | None = None,
        body: bytes | None = None,
        follow_redirects: bool = True,
        by: float | None = None,
    ) -> FetchResponse:
        """The answer to one request, whatever its status. `credentials` (header name → value) go to `url`'s
        origin only: a redirect to another origin drops them. Without `follow_redirects` a redirect is
        returned as it is. `by`: a deadline (`time.monotonic()`) of a larger task the request is part of, which
        it ends by too."""
        deadline = time.monotonic() + self.limits.timeout_seconds
        if by is not None:
            deadline = min(deadline, by)
        origin = url_origin(url)
        secret = dict(credentials or {})
        for hop in range(self.limits.max_redirects + 1):
            response = self._exchange(method, url, {**(headers or {}), **secret}, body, deadline)
            location = response.headers.get("location")
            if not follow_redirects or response.status not in REDIRECT_STATUSES or not location:
                return response
            if hop == self.limits.max_redirects:
                break
            try:
                target = join_url(url, location.strip())
                target_origin = url_origin(target)
            except BadUrl as exc:
                raise BadUrl(f"redirected to a Location that is not a URL: {exc}") from None
            if target_origin[0] not in ("http", "https"):
                raise BadUrl(f"redirected to a non-http(s) URL ({shown_url(target)}), which is not followed")
            if target_origin != origin:
                secret = {}  # and never again, even if a later hop comes back
            if response.status == 303 or (response.status in (301, 302) and method == "POST"):
                method, body = "GET", None
            url = target
        raise FetchError(f"more than {self.limits.max_redirects} redirects")

    def _exchange(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None, deadline: float
    ) -> FetchResponse:
        parts = split_url(url)
        if parts.scheme not in ("http", "https"):
            raise BadUrl(f"only http:// and https:// URLs are fetched, not {shown_url(url)}")
        if parts.username is not None or parts.password is not None:
            raise BadUrl("a URL with credentials in it (user:password@) is not fetched; give them as a secret")
        port = parts.port or _DEFAULT_PORTS[parts.scheme]
        host = parts.hostname
        if not host:
            raise BadUrl(f"{shown_url(url)} names no host")
        authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            addresses = self.checked_addresses(host, port, deadline)
            connection = self._connect(host, addresses, port, parts.scheme == "https", deadline)
        except AddressRefused as exc:
            raise FetchRefused(str(exc)) from None
        except OSError as exc:
            raise self._failed(authority, exc) from None
        try:
            sent = {"User-Agent": _USER_AGENT, "Connection": "close", **headers}
            connection.request(method, _target(parts), body=body, headers=sent)
            response = connection.getresponse()
            content = self._read(response, authority)
            return FetchResponse(
                url=url,
                status=response.status,
                reason=response.reason,
                headers={name.lower(): value for name, value in response.getheaders()},
                body=content,
            )
        except (OSError, http.client.HTTPException) as exc:
            raise self._failed(authority, exc) from None
        finally:
            connection.close()
            connection.guarded.release()

    def checked_addresses(self, host: str, port: int, deadline: float) -> list[IPAddress]:
        """The addresses of `host` once the policy has checked them all (`allowed_addresses`), by `deadline` (a
        `time.monotonic` time): past it, TimeoutError, an OSError like every other failure to resolve."""
        lookup = _LOOKUPS.submit(allowed_addresses, host, port, self.policy, self.resolve)
        try:
            return lookup.result(timeout=max(0.0, deadline - time.monotonic()))
        except concurrent.futures.TimeoutError:
            lookup.cancel()  # when still queued, it never runs; when running, it ends on its own
            raise TimeoutError(f"resolving {host} took longer than the fetch's deadline") from None

    def _connect(self, host: str, addresses: list[IPAddress], port: int, tls: bool, deadline: float) -> _Connection:
        """A connection to the first of `addresses` that answers (and to nothing else)."""
        failure: OSError = TimeoutError("no time left")
        for address in addresses:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                sock = socket.create_connection((str(address), port), timeout=remaining)
            except OSError as exc:
                failure = exc
                continue
            try:
                if tls:
                    sock.settimeout(max(0.001, deadline - time.monotonic()))  # the handshake as a whole
                    sock = (self.tls or _system_tls()).wrap_socket(sock, server_hostname=host)
            except OSError:
                sock.close()
                raise
            return _Connection(host, port, _DeadlineSocket(sock, deadline), 443 if tls else 80)
        raise failure

    def _read(self, response: http.client.HTTPResponse, authority: str) -> bytes:
        limit = self.limits.max_bytes
        declared = response.getheader("Content-Length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            raise ResponseTooLarge(f"the answer from {authority} is larger than the {limit} bytes allowed")
        chunks: list[bytes] = []
        size = 0
        while chunk := response.read(_CHUNK):
            size += len(chunk)
            if size > limit:
                raise ResponseTooLarge(f"the answer from {authority} is larger than the {limit} bytes allowed")
            chunks.append(chunk)
        if response.length:  # the connection ended before the declared length
            raise http.client.IncompleteRead(b"", response.length)
        return b"".join(chunks)

    def _failed(self, authority: str, exc: BaseException) -> FetchFailed:
        # The cause goes to the operator's log only: in an answer it would tell open ports from closed ones.
        log.info("fetch from %s failed: %s: %s", authority, type(exc).__name__, exc)
        return FetchFailed(
            f"no complete answer from {authority} within {self.limits.timeout_seconds:g} s (the name does not "
            "resolve, the connection failed, or the answer was too slow)"
        )


class _Connection(http.client.HTTPConnection):
    """An HTTP/1.1 exchange over a socket connected (and checked) beforehand: it never connects by itself."""

    def __init__(self, host: str, port: int, sock: _DeadlineSocket, default_port: int) -> None:
        super().__init__(host, port)
        self.default_port = default_port  # so that the Host header omits the scheme's own port
        self.sock = sock
        self.guarded = sock

    def connect(self) -> None:
        raise http.client.NotConnected("a guarded fetch connects only to checked addresses")


class _DeadlineSocket:
    """A connected socket whose every operation ends by the fetch's deadline (a plain socket timeout starts
    afresh at each read, so a server dripping bytes could hold the fetch for ever)."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline

    def _arm(self) -> None:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the fetch's deadline passed")
        self._sock.settimeout(remaining)

    def sendall(self, data: Any) -> None:
        self._arm()
        self._sock.sendall(data)

    def recv_into(self, buffer: Any) -> int:
        self._arm()
        return self._sock.recv_into(buffer)

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_Reader(self))

    def close(self) -> None:
        """Nothing: http.client closes its connection once the headers say so, while the body is still to be
        read from the file it made; the fetch closes the socket itself (`release`) when it is done."""

    def release(self) -> None:
        self._sock.close()


class _Reader(io.RawIOBase):
    def __init__(self, sock: _DeadlineSocket) -> None:
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._sock.recv_into(buffer)


def split_url(url: str) -> urllib.parse.SplitResult:
    """`url` in parts, its port read; BadUrl when they cannot be (an unclosed IPv6 bracket, a port out of range)."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - read for its check: urlsplit leaves the port unchecked until it is asked for
    except ValueError as exc:
        raise _bad_url(url, exc) from None
    return parts


def join_url(base: str, reference: str) -> str:
    """`reference` resolved against `base` (RFC 3986), checked like `split_url` (BadUrl)."""
    try:
        joined = urllib.parse.urljoin(base, reference)
    except ValueError as exc:
        raise _bad_url(reference, exc) from None
    split_url(joined)
    return joined


def url_origin(url: str) -> tuple[str, str, int | None]:
    """What makes two URLs one origin: scheme, host (lower case, no trailing dot) and port (the scheme's own when
    none is written; None for other schemes). BadUrl for a URL `split_url` refuses."""
    parts = split_url(url)
    return parts.scheme, (parts.hostname or "").rstrip("."), parts.port or _DEFAULT_PORTS.get(parts.scheme)


def _target(parts: urllib.parse.SplitResult) -> str:
    """The request target: path and query, with anything HTTP cannot carry percent-encoded."""
    path = urllib.parse.quote(parts.path or "/", safe=_SAFE_IN_PATH)
    if parts.query:
        path += "?" + urllib.parse.quote(parts.query, safe=_SAFE_IN_QUERY)
    return path


def _bad_url(url: str, problem: ValueError) -> BadUrl:
    try:
        return BadUrl(f"{shown_url(url)} is not a valid URL ({problem})")
    except ValueError:  # not even split: it is not shown (it may hold credentials)
        return BadUrl(f"the URL is not valid ({problem})")
