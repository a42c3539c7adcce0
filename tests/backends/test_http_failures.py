"""How HTTP backend failures read: each names the backend and the cause, TLS ones included."""

from __future__ import annotations

import errno
import ssl

import aiohttp

from apimcp.backends.http_common import exception_failure

HTTPS = "https://api.example.com:8443/v1/items"


def message(exc: Exception, url: str = HTTPS) -> str:
    return exception_failure(exc, url, 5).message


def test_a_reset_or_a_close_over_tls_mentions_client_certificates() -> None:
    reset = aiohttp.ClientOSError(errno.ECONNRESET, "Connection reset by peer")
    assert message(reset) == (
        "The connection to the backend failed (api.example.com:8443): connection reset by peer (over TLS, a server "
        "that requires a client certificate does this when it gets none)"
    )
    closed = message(aiohttp.ServerDisconnectedError())
    assert closed.startswith("The backend closed the connection without answering (api.example.com:8443) (over TLS")
    assert message(aiohttp.ServerDisconnectedError(), "http://api.example.com:8080/x") == (
        "The backend closed the connection without answering (api.example.com:8080)"
    )


def test_a_tls_alert_is_named() -> None:
    alert = ssl.SSLError(1, "[SSL: TLSV13_ALERT_CERTIFICATE_REQUIRED] tlsv13 alert certificate required")
    alert.reason = "TLSV13_ALERT_CERTIFICATE_REQUIRED"
    wrapped = aiohttp.ClientOSError(*alert.args)
    wrapped.__cause__ = alert
    assert message(wrapped) == (
        "The TLS connection with the backend failed (api.example.com:8443): TLSV13_ALERT_CERTIFICATE_REQUIRED"
    )
