"""Command-line options about how processes reach each other: TLS listeners, trusted CAs, plain HTTP, gateway keys."""

from __future__ import annotations

import os
import ssl
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from apimcp.cli.common import EXIT_USAGE, fail
from apimcp.safety.plain_http import refusal
from apimcp.servers.tls import ServerTls

if TYPE_CHECKING:
    from apimcp.sealing.keys import GatewayKey

GATEWAY_KEY_VARIABLE = "APIMCP_GATEWAY_KEY"

TlsCert = Annotated[
    Path | None, typer.Option("--tls-cert", help="Listen with HTTPS: this certificate (PEM, with its chain).")
]
TlsKey = Annotated[Path | None, typer.Option("--tls-key", help="The private key of --tls-cert (PEM).")]
AllowHttp = Annotated[
    bool,
    typer.Option(
        "--allow-http",
        help="Accept a plain http:// control plane that is not on loopback (its tokens then cross the network in "
        "clear).",
    ),
]
ControlPlaneCa = Annotated[
    Path | None,
    typer.Option("--control-plane-ca", help="Trust this CA (PEM) for an https:// control plane, e.g. a private CA."),
]
KeyFile = Annotated[
    Path | None,
    typer.Option(
        "--key-file",
        help=f"The gateway key (from `apimcp gateway-key create`; default: the PEM text in ${GATEWAY_KEY_VARIABLE}).",
        show_default=False,
    ),
]


def server_tls(certificate: Path | None, key: Path | None) -> ServerTls | None:
    """The listener's TLS files, checked now so that a mistake stops the command before anything starts."""
    if certificate is None and key is None:
        return None
    if certificate is None or key is None:
        fail("--tls-cert and --tls-key go together", EXIT_USAGE)
    tls = ServerTls(certificate, key)
    try:
        tls.check()
    except ValueError as exc:
        fail(str(exc), EXIT_USAGE)
    return tls


def trusted_ca(path: Path | None, option: str) -> ssl.SSLContext | None:
    if path is None:
        return None
    try:
        return ssl.create_default_context(cafile=str(path))
    except (OSError, ssl.SSLError) as exc:
        fail(f"{option} {path}: not a readable PEM CA certificate ({exc})", EXIT_USAGE)


def check_control_plane_url(url: str, allow_http: bool) -> None:
    problem = refusal(url, allow_http=allow_http)
    if problem is not None:
        fail(problem, EXIT_USAGE)


def gateway_key(path: Path | None) -> GatewayKey:
    """The gateway's key from --key-file, else from the environment; a clear usage error when there is none."""
    from apimcp.sealing.keys import GatewayKey  # noqa: PLC0415

    try:
        if path is not None:
            return GatewayKey.load(path)
        text = os.environ.get(GATEWAY_KEY_VARIABLE)
        if text:
            return GatewayKey.from_pem(text)
    except ValueError as exc:
        fail(str(exc), EXIT_USAGE)
    return fail(
        f"give the gateway key: --key-file FILE or ${GATEWAY_KEY_VARIABLE} (an admin makes one with "
        "`apimcp gateway-key create NAME --out FILE`)",
        EXIT_USAGE,
    )
