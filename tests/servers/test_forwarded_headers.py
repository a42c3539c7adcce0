"""Issue 21, L1: every apimcp server believes X-Forwarded-For and X-Forwarded-Proto from no one by default
(uvicorn believed them from 127.0.0.1: any local process chose the client address a request was audited and
rate limited as, and the scheme of OAuth resource URLs); only from the proxies the operator names."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import pytest

from apimcp.servers.factory import server_for
from apimcp.servers.forwarded_headers import ForwardedHeaders, proxy_settings, trusted_proxies
from apimcp.servers.lifecycle import StreamClosingServer
from tests.gateway.conftest import echo_config, gateway_for
from tests.support.mcp_http import McpHttp
from tests.support.processes import free_port

CALL = {"name": "get_item", "arguments": {"itemId": "1"}}
LIMITED = "expositions:\n  echo:\n    services: [echo]\n    audit: true\n    rate_limit: {caller: 1/min}\n"
PROTECTED = 'expositions:\n  echo:\n    services: [echo]\n    auth: {oauth: {issuers: ["https://idp.example"]}}\n'


@contextmanager
def gateway_served(extra: str, forwarded: ForwardedHeaders | None) -> Iterator[str]:
    """A gateway of the echo service served as apimcp serves it (`server_for`), on loopback: its base URL."""
    port = free_port()
    listening = threading.Event()
    servers: list[StreamClosingServer] = []

    async def serve() -> None:
        async with gateway_for(echo_config("{backend}", extra)) as app:
            server = server_for(
                app, app.shutdown, host="127.0.0.1", port=port, forwarded=forwarded, on_listening=listening.set
            )
            servers.append(server)
            await server.serve()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert listening.wait(60), "the gateway did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        servers[0].should_exit = True
        thread.join(timeout=10)


def _audited(caplog: pytest.LogCaptureFixture, count: int) -> list[dict[str, Any]]:
    for _ in range(500):  # a request's event is written once its answer is sent
        events = [json.loads(r.getMessage()) for r in caplog.records if r.name == "apimcp.audit"]
        if len(events) >= count:
            return events
        time.sleep(0.01)
    raise AssertionError(f"fewer than {count} audit events")


@pytest.mark.parametrize(
    ("forwarded", "statuses", "clients"),
    [
        (None, [200, 429], ["127.0.0.1", "127.0.0.1"]),  # one anonymous caller: the peer
        (ForwardedHeaders("127.0.0.1"), [200, 200], ["203.0.113.9", "203.0.113.10"]),  # two, as the proxy says
    ],
)
def test_x_forwarded_for_names_the_client_only_from_a_proxy_named(
    forwarded: ForwardedHeaders | None, statuses: list[int], clients: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="apimcp.audit")
    with gateway_served(LIMITED, forwarded) as base, McpHttp(f"{base}/mcp/echo") as mcp:
        answers = [mcp.modern("tools/call", CALL, headers={"x-forwarded-for": f"203.0.113.{n}"}) for n in (9, 10)]
        events = _audited(caplog, 2)
    assert [answer.status for answer in answers] == statuses  # the anonymous caller's rate-limit bucket
    assert [event["client"] for event in events] == clients  # and the audit trail's client address


@pytest.mark.parametrize(("forwarded", "scheme"), [(None, "http"), (ForwardedHeaders("127.0.0.0/8"), "https")])
def test_x_forwarded_proto_sets_the_resource_url_scheme_only_from_a_proxy_named(
    forwarded: ForwardedHeaders | None, scheme: str
) -> None:
    with gateway_served(PROTECTED, forwarded) as base:
        answer = httpx2.get(f"{base}/.well-known/oauth-protected-resource/mcp/echo",
                            headers={"x-forwarded-proto": "https"})  # fmt: skip
    assert answer.status_code == 200, answer.text
    assert answer.json()["resource"] == f"{scheme}://{base.removeprefix('http://')}/mcp/echo"


def test_uvicorn_is_told_to_believe_no_one_or_the_proxies_named() -> None:
    assert proxy_settings(ForwardedHeaders()) == {"proxy_headers": False}  # nor its FORWARDED_ALLOW_IPS variable
    named = ForwardedHeaders(" 10.0.0.5, 10.1.0.0/16 ,fd00::/8,")
    assert proxy_settings(named) == {
        "proxy_headers": True,
        "forwarded_allow_ips": ["10.0.0.5", "10.1.0.0/16", "fd00::/8"],
    }
    assert trusted_proxies("*") == ("*",)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("proxy.internal", "'proxy.internal' is not an IP address or a CIDR network"),
        ("10.0.0.1/8", "'10.0.0.1/8' is not an IP address or a CIDR network (10.0.0.5, 10.0.0.0/8: a network's host"),
        ("*, 10.0.0.1", "* (any peer) goes alone"),
    ],
)
def test_a_wrong_entry_is_refused_naming_it(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)):
        ForwardedHeaders(text)
