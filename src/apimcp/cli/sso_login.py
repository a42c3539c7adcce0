"""`apimcp login --sso`: a person signs in through the company's OpenID provider, by way of the control plane.

The CLI listens on a loopback port for the one request that ends the sign-in, opens the control plane's start
address in the browser (or prints it), and redeems the one-time code that comes back for the person's token. The
provider and the PKCE verifier stay with the control plane: the CLI holds no client secret.
"""

from __future__ import annotations

import threading
import webbrowser
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

WAIT_SECONDS = 300.0


class SignInFailed(Exception):
    pass


@dataclass
class _Outcome:
    code: str | None = None
    error: str | None = None
    arrived: threading.Event = field(default_factory=threading.Event)


def _handler(outcome: _Outcome) -> type[BaseHTTPRequestHandler]:
    class Callback(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path != "/callback":
                self.send_error(404)
                return
            said = {key: values[0] for key, values in parse_qs(parts.query).items()}
            outcome.code, outcome.error = said.get("code"), said.get("error")
            text = "Signed in: you may close this tab." if outcome.code else f"Not signed in: {outcome.error}"
            body = text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            outcome.arrived.set()

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the CLI says what happened."""

    return Callback


def sign_in_code(base_url: str, organization: str | None, *, open_browser: bool, tell: Any) -> str:
    """The one-time code a sign-in started at `base_url` (the control plane) hands back to a loopback port."""
    outcome = _Outcome()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(outcome))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        query = {"client": "cli", "port": str(server.server_address[1])}
        if organization:
            query["organization"] = organization
        start = f"{base_url}/api/v1/sso/start?{urlencode(query)}"
        tell(f"Sign in at {start}")
        if open_browser:
            webbrowser.open(start)
        if not outcome.arrived.wait(WAIT_SECONDS):
            raise SignInFailed(f"no sign-in came back within {WAIT_SECONDS:.0f} s")
    finally:
        server.shutdown()
        server.server_close()
    if not outcome.code:
        raise SignInFailed(outcome.error or "the sign-in came back without a code")
    return outcome.code
