"""The pages a user opens from an elicitation link, served by the gateway under `/elicitation/`.

- `GET /elicitation/{id}`: a form for a token, or a page that starts an OAuth connection;
- `POST /elicitation/{id}`: the token; the link is used up, the value stored for whoever the link was made for;
- `GET /elicitation/{id}/connect`: sets a cookie with a nonce, then sends the browser to the authorization
  server (PKCE, `state`);
- `GET /elicitation/callback`: the authorization server's answer: `state` must name a connection in progress
  and the browser must bring back that connection's cookie (so nobody can finish a connection in someone
  else's browser); the code is exchanged and the link used up.

A link works once and for a few minutes; a used, expired or unknown one gets 410/404 and nothing is stored.
Pages are plain HTML with a strict Content-Security-Policy, never cached, never framed; nothing a user typed
is shown back.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import html
import logging
from collections.abc import Mapping
from typing import Final
from urllib.parse import parse_qs, quote, urlsplit

from apimcp.auth.resource import DEFAULT_PORTS, request_origin
from apimcp.backends.credentials import header_problem
from apimcp.backends.oauth_http import CredentialError
from apimcp.elicitation.broker import PAGES, ElicitationBroker
from apimcp.protocol.caller import request_host
from apimcp.protocol.exchange import Receive, Scope, Send
from apimcp.protocol.security import TransportSecurity
from apimcp.state.owners import principal_of

log = logging.getLogger("apimcp.elicitation")
MAX_FORM_BYTES = 16 * 1024
MAX_TOKEN_CHARS = 8 * 1024
FORM_SECONDS = 10.0
COOKIE = "apimcp_elicitation"
_HEADERS = [
    (b"content-type", b"text/html; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make the form's own POST say `Origin: null`
    (b"x-content-type-options", b"nosniff"),
    (b"content-security-policy", b"default-src 'none'; style-src 'unsafe-inline'; form-action 'self'"),
]
_CONNECTING = [
    *_HEADERS[:-1],
    # the Connect form's answer sends the browser on to the service's authorization server, wherever it is
    (b"content-security-policy", b"default-src 'none'; style-src 'unsafe-inline'; form-action 'self' https: http:"),
]
_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;line-height:1.5}"
    "input{width:100%;padding:.5rem;font:inherit}button{margin-top:1rem;padding:.5rem 1.2rem;font:inherit}"
)


def _page(title: str, body: str) -> bytes:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f'<meta name="viewport" content="width=device-width,initial-scale=1"><style>{_STYLE}</style></head>'
        f"<body><main><h1>{html.escape(title)}</h1>{body}</main></body></html>"
    ).encode()


async def _send(
    send: Send,
    status: int,
    page: bytes,
    extra: list[tuple[bytes, bytes]] | None = None,
    base: list[tuple[bytes, bytes]] = _HEADERS,
) -> None:
    headers = [*base, (b"content-length", str(len(page)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": page})


async def _redirect(send: Send, location: str, extra: list[tuple[bytes, bytes]], status: int = 302) -> None:
    headers = [(b"location", location.encode()), (b"cache-control", b"no-store"), (b"content-length", b"0"), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


GONE = _page(
    "This link no longer works",
    "<p>It was used already, or it has expired. Ask your assistant to try again: it will give you a new link.</p>",
)
_LOOPBACK: Final = TransportSecurity()
"""The default Host allow-list: loopback names, at any port."""
NO_PUBLIC_URL = (
    "<p>This gateway does not know its public address, so it cannot tell the service where to send you back. Its "
    "operator sets it (<code>server.public_url</code>, or <code>--public-url</code>).</p>"
)
DONE = _page("Thank you", "<p>Your credential is saved. You can close this page and go back to your assistant.</p>")


async def _read_form(receive: Receive) -> dict[str, list[str]] | None:
    """The urlencoded body, or None when it is larger than MAX_FORM_BYTES or slower than FORM_SECONDS."""
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(FORM_SECONDS):
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return None
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > MAX_FORM_BYTES:
                    return None
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
    except TimeoutError:
        return None
    try:
        return parse_qs(b"".join(chunks).decode("utf-8", "replace"), max_num_fields=10)
    except ValueError:  # more fields than any of these forms has
        return None


@functools.lru_cache(maxsize=64)
def browser_origin(url: str) -> str:
    """The origin of `url` as a browser serializes it in `Origin`: scheme and host in lower case, no default port,
    no path."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    host = f"[{host}]" if ":" in host else host
    try:
        port = parts.port
    except ValueError:
        return url
    return f"{scheme}://{host}" if port is None or DEFAULT_PORTS.get(scheme) == port else f"{scheme}://{host}:{port}"


def _cookie(scope: Scope, name: str) -> str | None:
    for key, value in scope["headers"]:
        if key == b"cookie":
            text: str = value.decode("latin-1")
            for part in text.split(";"):
                cookie_name, _, cookie_value = part.strip().partition("=")
                if cookie_name == name:
                    return cookie_value
    return None


def _sent_from(scope: Scope) -> str | None:
    """The `Origin` a request names (a browser names it with every POST), if any."""
    return next((v.decode("latin-1") for k, v in scope["headers"] if k == b"origin"), None)


def _for_whom(owner: str) -> str:
    """Whose the value will be, said on the page: someone sent a link made for their own account would see it
    names another (the link itself cannot tell who opens it)."""
    principal = principal_of(owner)
    if principal is not None:
        issuer, _, who = principal.partition(" ")
        name = who.partition("=")[2] or who
        return (f"</p><p>It will be used for <strong>{html.escape(name)}</strong> (signed in at "
                f"{html.escape(issuer)}). If that is not you, or you did not just ask your assistant for this, "
                "close this page.")  # fmt: skip
    return ("</p><p>It will be used for the conversation with your assistant that asked for it. If you did not "
            "just ask for this, close this page.")  # fmt: skip


class ElicitationPages:
    """ASGI app for everything under `/elicitation/`."""

    def __init__(self, broker: ElicitationBroker) -> None:
        self._broker = broker

    def _origin(self, scope: Scope) -> str:
        return request_origin(scope["scheme"], scope["headers"], self._broker.public_url)

    def _from_here(self, scope: Scope) -> bool:
        """Whether the request's `Origin` is this page's own, compared as a browser writes it (a public URL may be
        given with capitals, a default port or a path)."""
        return _sent_from(scope) == browser_origin(self._origin(scope))

    def _callback_url(self, scope: Scope) -> str | None:
        """Where the service sends the user back: under the public URL, else under the request's origin only when it
        is a loopback one. A Host the gateway admits (a wildcard, a second name) may still be someone else's, and a
        callback there (registered for by the gateway itself when it discovers the service) hands the user's
        authorization code to whoever holds that name."""
        if self._broker.public_url or _LOOPBACK.host_allowed(request_host(scope["headers"])):
            return f"{self._origin(scope)}{PAGES}/callback"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"][len(PAGES) :].strip("/")
        method = scope["method"]
        if path == "callback" and method == "GET":
            await self._callback(scope, send)
            return
        pending_id, _, action = path.partition("/")
        if not pending_id or action not in ("", "connect"):
            await _send(send, 404, GONE)
            return
        if action == "connect" and method == "POST":
            await self._connect(scope, send, pending_id)
        elif action == "connect" and method == "GET":  # a link straight to it shows whose the connection will be
            await _redirect(send, f"{PAGES}/{quote(pending_id, safe='')}", [], 303)
        elif method == "GET":
            await self._show(scope, send, pending_id)
        elif method == "POST" and not action:
            await self._submit(scope, receive, send, pending_id)
        else:
            await _send(send, 405, _page("Not here", "<p>This page takes GET and POST only.</p>"),
                        [(b"allow", b"GET, POST")])  # fmt: skip

    async def _show(self, scope: Scope, send: Send, pending_id: str) -> None:
        pending = await self._broker.pending.get(pending_id)
        secret = self._broker.secrets.get(pending.key) if pending is not None else None
        if pending is None or secret is None:
            await _send(send, 404, GONE)
            return
        prompt = html.escape(secret.prompt()) + _for_whom(pending.owner)
        name = html.escape(secret.name)
        if secret.oauth is not None:
            body = (f"<p>{prompt}</p><p>You will sign in with the service's own login page; the assistant never "
                    f'sees your password.</p><form method="post" action="{PAGES}/{html.escape(pending_id)}/connect">'
                    '<button type="submit">Connect</button></form>')  # fmt: skip
            await _send(send, 200, _page(f"Connect {secret.name}", body), base=_CONNECTING)
            return
        body = (f"<p>{prompt}</p><form method=\"post\" action=\"{PAGES}/{html.escape(pending_id)}\">"
                f'<label for="token">{name}</label><input id="token" name="token" type="password" required '
                f'autocomplete="off" maxlength="{MAX_TOKEN_CHARS}"><button type="submit">Save</button></form>'
                "<p>The value is kept for you alone, sealed, and used only when your assistant calls this API.</p>"
                )  # fmt: skip
        await _send(send, 200, _page(f"Your credential for {secret.name}", body))

    async def _submit(self, scope: Scope, receive: Receive, send: Send, pending_id: str) -> None:
        if _sent_from(scope) is not None and not self._from_here(scope):
            await _send(send, 403, _page("Refused", "<p>This form can only be sent from its own page.</p>"))
            return
        form = await _read_form(receive)
        if form is None:
            await _send(send, 413, _page("Refused", "<p>The form is too large or too slow.</p>"))
            return
        token = (form.get("token") or [""])[0].strip()
        problem = header_problem(token) if token else "it is empty"
        if problem is None and len(token) > MAX_TOKEN_CHARS:
            problem = f"it is longer than {MAX_TOKEN_CHARS} characters"
        pending = await self._broker.pending.get(pending_id)
        secret = self._broker.secrets.get(pending.key) if pending is not None else None
        if pending is None or secret is None or secret.oauth is not None:
            await _send(send, 410, GONE)
            return
        if problem is not None:
            again = f'<p><a href="{PAGES}/{html.escape(pending_id)}">Try again</a></p>'
            text = f"<p>This value cannot be used: {html.escape(problem)}.</p>{again}"
            await _send(send, 400, _page("Not saved", text))
            return
        taken = await self._broker.pending.take(pending_id)
        if taken is None:  # used by a concurrent request in between
            await _send(send, 410, GONE)
            return
        await self._broker.complete(taken, {"token": token})
        await _send(send, 200, DONE)

    async def _connect(self, scope: Scope, send: Send, pending_id: str) -> None:
        """The Connect button's POST, from the page that said whose the connection will be: only from that page
        (its `Origin`; a browser sends it with every POST), so that a link or a form elsewhere cannot start a
        connection in someone else's browser for the link's owner."""
        if not self._from_here(scope):
            await _send(send, 403, _page("Refused", "<p>A connection starts only from its own page's button.</p>"))
            return
        pending = await self._broker.pending.get(pending_id)
        secret = self._broker.secrets.get(pending.key) if pending is not None else None
        if pending is None or secret is None or secret.oauth is None:
            await _send(send, 410, GONE)
            return
        callback = self._callback_url(scope)
        if callback is None:
            await _send(send, 409, _page("Not connected", NO_PUBLIC_URL))
            return
        try:
            location, nonce = await self._broker.start_connection(pending, callback)
        except CredentialError as exc:  # an MCP server's authorization server could not be found or joined
            log.info("a connection could not be started: %s", exc)
            await _send(send, 502, _page("Not connected", f"<p>{html.escape(str(exc))}.</p>"))
            return
        secure = "; Secure" if browser_origin(callback).startswith("https://") else ""
        cookie = f"{COOKIE}={nonce}; Path={PAGES}; HttpOnly; SameSite=Lax; Max-Age=600{secure}"
        await _redirect(send, location, [(b"set-cookie", cookie.encode())], 303)

    async def _callback(self, scope: Scope, send: Send) -> None:
        try:
            query: Mapping[str, list[str]] = parse_qs(
                scope.get("query_string", b"").decode("latin-1"), max_num_fields=10
            )
        except ValueError:  # more parameters than an authorization answer has
            await _send(send, 400, _page("Not connected", "<p>This answer is not one the service sends.</p>"))
            return
        state = (query.get("state") or [""])[0]
        pending = await self._broker.pending.by_state(state) if state else None
        nonce = _cookie(scope, COOKIE)
        if pending is None or pending.nonce is None or nonce is None or not hmac.compare_digest(nonce, pending.nonce):
            text = ("<p>This answer does not belong to a connection started in this browser, or it has expired. "
                    "Ask your assistant to try again.</p>")  # fmt: skip
            await _send(send, 400, _page("Not connected", text))
            return
        taken = await self._broker.pending.take(pending.id)
        clear = [(b"set-cookie", f"{COOKIE}=; Path={PAGES}; Max-Age=0; HttpOnly; SameSite=Lax".encode())]
        if taken is None:
            await _send(send, 410, GONE, clear)
            return
        code = (query.get("code") or [""])[0]
        callback = self._callback_url(scope)
        if callback is None:  # a connection cannot have started with this origin
            await _send(send, 409, _page("Not connected", NO_PUBLIC_URL), clear)
            return
        if not code:
            error = (query.get("error") or ["no code"])[0][:60]
            text = f"<p>The service did not grant access ({html.escape(error)}).</p>"
            await _send(send, 400, _page("Not connected", text), clear)
            return
        try:
            named = query.get("iss")
            await self._broker.finish_connection(taken, code, callback, named[0] if named else None)
        except CredentialError as exc:
            log.info("a connection could not be finished: %s", exc)
            await _send(send, 502, _page("Not connected", f"<p>{html.escape(str(exc))}.</p>"), clear)
            return
        await _send(send, 200, _page("Connected", "<p>You can close this page and go back to your assistant.</p>"),
                    clear)  # fmt: skip
