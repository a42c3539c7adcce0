"""`servers` entries (document, path or operation level) as catalog ServerTemplates, each a URL calls can use.

A server URL is taken as written (its variables at their defaults when called) when it is absolute
(`https://api.example.com/v1`) or a path beginning with one `/` (joined to the description's first server, or
replaced by the plan's backend). Any other URL is relative to where the description is served, as OpenAPI says
(`v1`, `../api`, `//api.example.com/v1`, and `api.example.com/v1`, which is a relative path too): resolved
against the description's URL when it was fetched from one, and told in the service's warnings; from a file or
an upload there is nothing to resolve it against, so the import is refused naming the URL's JSON pointer. Left
as it was, such a URL was appended to as text at call time and was no URL at all (aiohttp refused it, or failed
on a URL with a host but no scheme).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from apimcp.catalog.model import ServerTemplate, ServerVariable
from apimcp.importers.errors import SpecError
from apimcp.importers.openapi.warnings import WarningLog

_VARIABLE = re.compile(r"\{([^{}]*)\}")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
"""What an absolute server URL starts with (`localhost:8080/v1` has none: it is a relative path)."""


class ServerReader:
    """Reads the `servers` of one description; `description_url`: where it was fetched from (None: a file, an
    upload)."""

    def __init__(self, description_url: str | None, source: str | None, log: WarningLog) -> None:
        self._base = _without_secrets(description_url) if description_url is not None else None
        self._source = source
        self._log = log

    def read(self, raw: Any, at: str) -> tuple[ServerTemplate, ...]:
        """The servers of the `servers` list at JSON pointer `at`."""
        if not isinstance(raw, list):
            return ()
        servers = []
        for index, server in enumerate(raw):
            if not isinstance(server, dict) or not isinstance(server.get("url"), str):
                continue
            variables = {}
            raw_variables = server.get("variables")
            for name, variable in (raw_variables if isinstance(raw_variables, dict) else {}).items():
                if isinstance(variable, dict) and variable.get("default") is not None:
                    raw_enum = variable.get("enum")
                    values = raw_enum if isinstance(raw_enum, list) else ()  # another kind says nothing usable
                    enum = tuple(str(v) for v in values if v is not None)
                    variables[name] = ServerVariable(default=str(variable["default"]), enum=enum)
            servers.append(self._usable(ServerTemplate(url=server["url"], variables=variables), f"{at}/{index}/url"))
        return tuple(servers)

    def _usable(self, server: ServerTemplate, at: str) -> ServerTemplate:
        url = server.resolve()  # as calls will use it
        unset = _VARIABLE.search(url)
        if unset is not None:
            raise SpecError(f"the server URL {server.url!r} uses the variable {unset.group(1)!r}, which has no default "
                            "in its variables", source=self._source, pointer=at)  # fmt: skip
        if url.startswith("/") and not url.startswith("//"):
            return server
        if _SCHEME.match(url):
            self._check_host(url, url, at)
            return server
        if self._base is None:
            raise SpecError(
                f"the server URL {url!r} is relative (it does not begin with a scheme such as https:// or with '/'): "
                "it is relative to the description's own URL, and this description was not fetched from one; write "
                "the API's absolute URL, or a path beginning with '/' and a backend URL for the plan",
                source=self._source,
                pointer=at,
            )
        try:
            resolved = urljoin(self._base, url)
        except ValueError as exc:
            raise SpecError(f"the server URL {url!r} is not a URL ({exc})", source=self._source, pointer=at) from None
        self._check_host(resolved, url, at)
        self._log.add_at(at, f"the server URL {url!r} is relative: resolved against the description's URL, {resolved}")
        return ServerTemplate(url=resolved)

    def _check_host(self, url: str, written: str, at: str) -> None:
        try:
            host = urlsplit(url).hostname
        except ValueError as exc:  # an unclosed IPv6 bracket, say
            message = f"the server URL {written!r} is not a URL ({exc})"
            raise SpecError(message, source=self._source, pointer=at) from None
        if not host:
            raise SpecError(f"the server URL {written!r} names no host", source=self._source, pointer=at)


def _without_secrets(url: str) -> str:
    """The description's URL as relative server URLs are resolved against it: no user name, password, query or
    fragment (a token the description was fetched with must not become part of the service's servers)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))
