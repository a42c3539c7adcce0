"""Where resources without inline content come from: a plan's backend, or a remote URL.

`file:///guides/readme.md` is read with a GET of `/guides/readme.md` on the REST backend of the member whose
artifacts declared the resource (an exposition of several services has one backend per service), the way that
member's operations are called for a request (`member_backends`): that plan's credentials, timeout, size limit,
masking and redirect rules, the headers its policy passes on, the user's own credentials (asked for by URL
elicitation as a tool call asks, or the same clear refusal), a CLIENT span and a latency figure when telemetry
is on. A path that is not a plain one under the backend's origin (`artifacts.file_paths`) is refused before any
request.
`remoteContent` URLs (MCP Apps' HTML) are fetched with the session that applies the gateway's fetch policy,
since the URL comes from an uploaded file and must not reach internal addresses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import quote

import aiohttp

from apimcp.artifacts.file_paths import file_path_problem
from apimcp.artifacts.resources import ContentLoader, ContentMissing, Loaded, ResourceUnavailable
from apimcp.backends.base import BinaryBody, EmptyBody, Failure, JsonBody, TextBody, UnparsedJson
from apimcp.backends.http_common import read_limited
from apimcp.backends.oauth_client import TokenSession
from apimcp.catalog.model import Operation, RestBinding, ToolHints
from apimcp.elicitation.broker import CredentialRefused
from apimcp.gateway.member_backends import MemberBackend
from apimcp.protocol import RequestContext
from apimcp.safety.addresses import AddressRefused

_UNSAFE = re.compile(r"[^A-Za-z0-9\-._~!$&'()*+,;=:@/%?]")
"""What a URI path and query may not hold as is: sent percent-encoded (a fragment never reaches a server)."""

MAX_REMOTE_BYTES = 5 * 1024 * 1024
REMOTE_TIMEOUT_SECONDS = 10.0


class BackendLoader:
    """Reads resources for one exposition; `backends` are its members', in order."""

    def __init__(self, backends: Sequence[MemberBackend], remote: TokenSession) -> None:
        self._backends = tuple(backends)
        self._remote = remote

    def for_request(self, ctx: RequestContext) -> ContentLoader:
        """What the resource catalog reads with for `ctx`'s request (files are read on its behalf)."""
        return _ForRequest(self, ctx)

    async def backend_file(self, ctx: RequestContext, path: str, member: int) -> Loaded:
        if not 0 <= member < len(self._backends):
            raise ResourceUnavailable("this exposition's backend does not serve files")
        backend = self._backends[member]
        problem = file_path_problem(path)
        if problem is not None:
            raise ResourceUnavailable(problem)
        sent = _UNSAFE.sub(lambda found: quote(found.group(), safe=""), path.split("#", 1)[0])
        operation = Operation(
            tool_name="resources_read",
            input_schema={"type": "object"},
            binding=RestBinding(method="GET", path=sent),
            hints=ToolHints(read_only=True),
        )
        try:
            result = await backend.call(ctx, operation, {})
        except CredentialRefused as refused:
            raise ResourceUnavailable(str(refused)) from None
        if isinstance(result, Failure):
            if result.status in (404, 410):
                raise ContentMissing
            raise ResourceUnavailable(result.message)
        if isinstance(result, JsonBody):
            return Loaded(result.text.encode(), "application/json")
        if isinstance(result, UnparsedJson):  # a large file is passed on as it came, unparsed
            return Loaded(result.data, "application/json")
        if isinstance(result, TextBody):
            return Loaded(result.text.encode(), result.media_type)
        if isinstance(result, BinaryBody):
            return Loaded(result.data, result.media_type)
        assert isinstance(result, EmptyBody)
        return Loaded(b"", "text/plain")

    async def remote(self, url: str) -> Loaded:
        try:
            session = self._remote.for_url(url)
            timeout = aiohttp.ClientTimeout(total=REMOTE_TIMEOUT_SECONDS)
            async with session.get(url, timeout=timeout, allow_redirects=False) as response:
                if response.status != 200:
                    raise ResourceUnavailable(f"{_origin(url)} answered HTTP {response.status}")
                body = await read_limited(response, MAX_REMOTE_BYTES)
                if body is None:
                    too_large = f"the content at {_origin(url)} is larger than {MAX_REMOTE_BYTES} bytes"
                    raise ResourceUnavailable(too_large)
                return Loaded(body, response.headers.get("Content-Type", "application/octet-stream"))
        except AddressRefused as exc:
            raise ResourceUnavailable(f"the content's address is refused: {exc}") from exc
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ResourceUnavailable(
                f"the content at {_origin(url)} could not be read ({type(exc).__name__})"
            ) from exc


class _ForRequest:
    __slots__ = ("_ctx", "_loader")

    def __init__(self, loader: BackendLoader, ctx: RequestContext) -> None:
        self._loader = loader
        self._ctx = ctx

    async def backend_file(self, path: str, member: int) -> Loaded:
        return await self._loader.backend_file(self._ctx, path, member)

    async def remote(self, url: str) -> Loaded:
        return await self._loader.remote(url)


def _origin(url: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0].rsplit('@', 1)[-1]}"
