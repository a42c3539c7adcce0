"""Where the CLI finds its control plane: a saved context, or the environment.

`apimcp login` saves the control plane's URL and a token in a file only its owner
may read (`$APIMCP_CONFIG`, else `$XDG_CONFIG_HOME/apimcp/context.json`), with
the CA to trust and whether plain HTTP off loopback was accepted.
`APIMCP_URL` and `APIMCP_TOKEN` override it, for scripts and CI (and
`APIMCP_ALLOW_HTTP=1` accepts a plain http:// URL off loopback).
"""

from __future__ import annotations

import hmac
import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path

URL_VARIABLE = "APIMCP_URL"
TOKEN_VARIABLE = "APIMCP_TOKEN"
ALLOW_HTTP_VARIABLE = "APIMCP_ALLOW_HTTP"
DEFAULT_URL = "http://127.0.0.1:8080"


@dataclass(frozen=True, slots=True)
class Context:
    url: str
    token: str
    organization: str | None = None
    ca_file: str | None = None
    """A CA (PEM) to trust for an https:// control plane besides the system's."""
    allow_http: bool = False
    """Plain http:// to a host that is not loopback was accepted at login."""

    def __repr__(self) -> str:
        return f"Context(url={self.url!r}, organization={self.organization!r})"


def context_path() -> Path:
    configured = os.environ.get("APIMCP_CONFIG")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "apimcp" / "context.json"


def load() -> Context | None:
    """The context to use: the environment's, else the saved one, else None."""
    saved = _read(context_path())
    url = os.environ.get(URL_VARIABLE) or (saved.url if saved else None)
    token = os.environ.get(TOKEN_VARIABLE) or (saved.token if saved else None)
    if url is None or token is None:
        return None
    same = saved is not None and saved.url == url
    organization = saved.organization if saved and same and saved.token == token else None
    return Context(
        url.rstrip("/"),
        token,
        organization,
        ca_file=saved.ca_file if saved and same else None,
        allow_http=(saved.allow_http if saved and same else False) or os.environ.get(ALLOW_HTTP_VARIABLE) == "1",
    )


def _read(path: Path) -> Context | None:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read the CLI context {path}: {exc}; run `apimcp login` again") from None
    if not isinstance(data, dict) or not isinstance(data.get("url"), str) or not isinstance(data.get("token"), str):
        raise ValueError(f"the CLI context {path} is not valid; run `apimcp login` again")
    ca_file = data.get("ca_file")
    return Context(
        data["url"],
        data["token"],
        data.get("organization"),
        ca_file=ca_file if isinstance(ca_file, str) else None,
        allow_http=data.get("allow_http") is True,
    )


def save(context: Context) -> Path:
    """Write `context` so that only the current user can read it (the token opens the organization)."""
    path = context_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_suffix(".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        json.dump(asdict(context), file, indent=2)
    temporary.replace(path)
    return path


def follow(url: str, token_file: Path) -> Path | None:
    """Point the saved context at `url` when it holds the token of `token_file` (the one a local server made
    on its first start, and logged the CLI in with) at another URL: that server, started on another port since.
    A context the user saved for another control plane, or with another token, is left alone."""
    try:
        saved = _read(context_path())
        token = token_file.read_text().strip()
    except (OSError, ValueError):
        return None
    if saved is None or saved.url.rstrip("/") == url or not hmac.compare_digest(saved.token, token):
        return None
    return save(replace(saved, url=url))


def forget() -> bool:
    try:
        context_path().unlink()
    except FileNotFoundError:
        return False
    return True
