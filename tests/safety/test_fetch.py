"""The guarded fetch, against servers on loopback: what it refuses (before connecting), where it connects,
how it follows redirects, its deadline, its size cap and its errors."""

from __future__ import annotations

import ipaddress
import re
import socket
import ssl
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path

import pytest
from aiohttp import web

from apimcp.safety.addresses import AddressPolicy, IPAddress
from apimcp.safety.fetch import (
    BadUrl,
    Fetcher,
    FetchError,
    FetchFailed,
    FetchLimits,
    FetchRefused,
    HttpStatusError,
    ResponseTooLarge,
)
from tests.support.fetching import connections_to, counting_listener, forbid_connections
from tests.support.grpc_certs import make_pki
from tests.support.live_aiohttp import live_aiohttp
from tests.support.misbehaving import dripping, misbehaving, resetting, silent
from tests.support.processes import free_port

LOOPBACK = AddressPolicy.allowing(["127.0.0.0/8"])


def redirect(location: str, status: int = 302) -> web.Response:
    return web.Response(status=status, headers={"Location": location})


def resolving(table: dict[str, Sequence[str]]) -> Callable[[str, int], list[IPAddress]]:
    """A resolver for test names (which the system could not resolve); addresses stand for themselves."""

    def resolve(host: str, port: int) -> list[IPAddress]:
        if host in table:
            return [ipaddress.ip_address(a) for a in table[host]]
        return [ipaddress.ip_address(host.strip("[]"))]

    return resolve


class Recorder:
    """An aiohttp app that records what reached it."""

    def __init__(self, answer: bytes = b"openapi: 3.1.0\n") -> None:
        self.requests: list[dict[str, str]] = []
        self.answer = answer
        self.routes: dict[str, Callable[[web.Request], web.StreamResponse]] = {}

    def app(self) -> web.Application:
        async def handle(request: web.Request) -> web.StreamResponse:
            self.requests.append({"path": request.path_qs, "method": request.method, **request.headers})
            special = self.routes.get(request.path)
            if special is not None:
                return special(request)
            return web.Response(body=self.answer, content_type="application/yaml")

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        return app


@pytest.fixture
def recorder() -> Iterator[tuple[Recorder, str]]:
    server = Recorder()
    with live_aiohttp(server.app) as base:
        yield server, base


@pytest.fixture
def counted() -> Iterator[socket.socket]:
    with counting_listener() as listener:
        yield listener


@pytest.fixture
def no_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to connect fails the test: refusals of non-loopback addresses send nothing anywhere."""
    forbid_connections(monkeypatch)


@pytest.mark.parametrize(
    "host", ["localhost", "0.0.0.0", "2130706433", "0x7f000001", "127.1", "0177.0.0.1", "[::1]", "[::ffff:127.0.0.1]"]
)
def test_loopback_in_every_spelling_is_refused_before_connecting(host: str, counted: socket.socket) -> None:
    port = counted.getsockname()[1]
    with pytest.raises(FetchRefused) as caught:
        Fetcher().get(f"http://{host}:{port}/openapi.yaml")
    message = str(caught.value)
    assert "loopback address" in message or "unspecified address" in message
    assert "--fetch-allow" in message and "APIMCP_FETCH_ALLOW" in message and "server.fetch_allow" in message
    assert connections_to(counted) == 0


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/iam/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
        "http://100.100.100.200/latest/meta-data/",
    ],
)
@pytest.mark.usefixtures("no_connections")
def test_metadata_addresses_are_refused_even_when_allowed(url: str) -> None:
    allowing = Fetcher(AddressPolicy.allowing(["169.254.0.0/16", "fd00::/8", "100.64.0.0/10", "::/0"]))
    with pytest.raises(FetchRefused, match=r"a cloud metadata address, which .* no request made on someone's behalf"):
        allowing.get(url)


@pytest.mark.usefixtures("no_connections")
def test_a_name_that_resolves_to_a_metadata_address_is_refused() -> None:
    fetcher = Fetcher(resolve=resolving({"metadata.test": ["169.254.169.254"]}))
    with pytest.raises(FetchRefused, match=r"^metadata\.test resolves to a cloud metadata address"):
        fetcher.get("http://metadata.test/computeMetadata/v1/")


@pytest.mark.usefixtures("no_connections")
@pytest.mark.parametrize(
    "url", ["http://10.0.0.8/spec.yaml", "https://192.168.1.1/", "http://[fd12::1]/", "http://100.64.1.1/"]
)
def test_private_addresses_are_refused(url: str) -> None:
    with pytest.raises(FetchRefused, match=r"a private address|a shared address"):
        Fetcher().get(url)


def test_a_redirect_to_loopback_is_refused(counted: socket.socket) -> None:
    """A public-looking host (allowed here by name) answers with a redirect inside: the hop is checked too."""
    port = counted.getsockname()[1]
    server = Recorder()
    server.routes["/spec.yaml"] = lambda _: redirect(f"http://127.0.0.1:{port}/admin")
    with live_aiohttp(server.app, host="127.0.0.2") as base:
        fetcher = Fetcher(AddressPolicy.allowing(["public.test"]), resolve=resolving({"public.test": ["127.0.0.2"]}))
        with pytest.raises(FetchRefused, match=r"^127\.0\.0\.1 is a loopback address"):
            fetcher.get(base.replace("127.0.0.2", "public.test") + "/spec.yaml")
    assert [r["path"] for r in server.requests] == ["/spec.yaml"]
    assert connections_to(counted) == 0


def test_the_connection_goes_to_the_address_that_was_checked() -> None:
    """DNS rebinding: the name resolves to one address, then to another (both serve on the same port). The fetch
    resolves once and connects to what it checked; the next fetch checks the new answer."""
    checked, other = Recorder(b"checked"), Recorder(b"other")
    asked: list[str] = []

    def rebinding(host: str, port: int) -> list[IPAddress]:
        asked.append(host)
        return [ipaddress.ip_address("127.0.0.2" if len(asked) == 1 else "127.0.0.3")]

    with live_aiohttp(checked.app, host="127.0.0.2") as first:
        port = int(first.rsplit(":", 1)[1])
        with live_aiohttp(other.app, host="127.0.0.3", port=port):
            fetcher = Fetcher(AddressPolicy.allowing(["127.0.0.2", "127.0.0.3"]), resolve=rebinding)
            assert fetcher.get(f"http://rebind.test:{port}/spec.yaml") == b"checked"
            assert asked == ["rebind.test"]
            narrower = Fetcher(AddressPolicy.allowing(["127.0.0.2"]), resolve=rebinding)
            with pytest.raises(FetchRefused, match=r"^rebind\.test resolves to a loopback address"):
                narrower.get(f"http://rebind.test:{port}/spec.yaml")
    assert [r["Host"] for r in checked.requests] == [f"rebind.test:{port}"]  # the Host header keeps the name
    assert other.requests == []


def test_the_allow_list_lets_named_hosts_suffixes_and_networks_through() -> None:
    server = Recorder(b"internal description")
    with live_aiohttp(server.app, host="127.0.0.2") as base:
        port = base.rsplit(":", 1)[1]
        table: dict[str, Sequence[str]] = {
            "descriptions.corp.test": ["127.0.0.2"],
            "api.corp.test": ["127.0.0.2"],
            "corp.test": ["127.0.0.2"],
        }
        for entries, host in [
            (["descriptions.corp.test"], "descriptions.corp.test"),
            (["*.corp.test"], "api.corp.test"),
            (["127.0.0.0/30"], "corp.test"),
        ]:
            fetcher = Fetcher(AddressPolicy.allowing(entries), resolve=resolving(table))
            assert fetcher.get(f"http://{host}:{port}/x") == b"internal description"
        with pytest.raises(FetchRefused, match=r"--fetch-allow corp\.test "):
            Fetcher(AddressPolicy.allowing(["*.corp.test"]), resolve=resolving(table)).get(f"http://corp.test:{port}/")
    assert len(server.requests) == 3


def test_tls_checks_the_certificate_and_sends_the_server_name_of_the_host() -> None:
    """The server's certificate is valid for descriptions.test only, and it listens on 127.0.0.2: the fetch
    connects to the address but verifies (and asks for, by SNI) the name."""
    pki = make_pki(server_name="descriptions.test")
    names: list[str | None] = []
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory() as folder:
        cert, key = Path(folder, "cert.pem"), Path(folder, "key.pem")
        cert.write_bytes(pki.server.cert_pem)
        key.write_bytes(pki.server.key_pem)
        context.load_cert_chain(cert, key)
    context.sni_callback = lambda _sock, name, _context: names.append(name)
    trusting = ssl.create_default_context(cadata=pki.ca.cert_pem.decode())
    server = Recorder(b"over tls")
    with live_aiohttp(server.app, tls=context, host="127.0.0.2") as base:
        port = base.rsplit(":", 1)[1]
        table = resolving({"descriptions.test": ["127.0.0.2"], "other.test": ["127.0.0.2"]})
        policy = AddressPolicy.allowing(["127.0.0.2"])
        fetcher = Fetcher(policy, resolve=table, tls=trusting)
        assert fetcher.get(f"https://descriptions.test:{port}/spec.yaml") == b"over tls"
        with pytest.raises(FetchFailed):  # a name the certificate does not hold
            fetcher.get(f"https://other.test:{port}/spec.yaml")
        with pytest.raises(FetchFailed):  # the system's trust does not know the test CA
            Fetcher(policy, resolve=table).get(f"https://descriptions.test:{port}/spec.yaml")
    assert names[0] == "descriptions.test"
    assert [r["Host"] for r in server.requests] == [f"descriptions.test:{port}"]


def test_redirects_are_followed_by_hand_and_drop_credentials_when_the_origin_changes() -> None:
    first, second = Recorder(), Recorder(b"moved here")
    with live_aiohttp(first.app, host="127.0.0.2") as a, live_aiohttp(second.app, host="127.0.0.3") as b:
        first.routes["/same"] = lambda _: redirect("/final")
        first.routes["/away"] = lambda _: redirect(f"{b}/final", 301)
        first.routes["/back"] = lambda _: redirect(f"{b}/to-first")
        second.routes["/to-first"] = lambda _: redirect(f"{a}/final", 307)
        fetcher = Fetcher(LOOPBACK)
        secret = {"Authorization": "Bearer s3cret"}
        assert fetcher.get(f"{a}/same", credentials=secret) == b"openapi: 3.1.0\n"
        assert fetcher.get(f"{a}/away", credentials=secret) == b"moved here"
        fetcher.get(f"{a}/back", credentials=secret)
    assert [(r["path"], r.get("Authorization")) for r in first.requests] == [
        ("/same", "Bearer s3cret"),
        ("/final", "Bearer s3cret"),  # same origin: kept
        ("/away", "Bearer s3cret"),
        ("/back", "Bearer s3cret"),
        ("/final", None),  # back at the first origin after another: not sent again
    ]
    assert [(r["path"], r.get("Authorization")) for r in second.requests] == [("/final", None), ("/to-first", None)]


def test_redirects_leave_http_never_and_end_after_a_few_hops(recorder: tuple[Recorder, str]) -> None:
    server, base = recorder
    server.routes["/file"] = lambda _: redirect("file:///etc/passwd")
    server.routes["/loop"] = lambda request: redirect(f"/loop?n={int(request.query.get('n', '0')) + 1}")
    fetcher = Fetcher(LOOPBACK, FetchLimits(max_redirects=3))
    with pytest.raises(BadUrl, match="redirected to a non-http\\(s\\) URL \\(file:///etc/passwd\\)"):
        fetcher.get(f"{base}/file")
    with pytest.raises(FetchError, match="more than 3 redirects"):
        fetcher.get(f"{base}/loop")
    assert len([r for r in server.requests if r["path"].startswith("/loop")]) == 4
    response = fetcher.request("GET", f"{base}/loop", follow_redirects=False)
    assert (response.status, response.headers["location"]) == (302, "/loop?n=1")


def test_a_dripping_server_is_cut_at_the_total_deadline() -> None:
    """One byte every 0.2 s never trips a read timeout; the fetch's one deadline ends it anyway."""
    with misbehaving(dripping(0.2)) as server:
        started = time.monotonic()
        with pytest.raises(FetchFailed) as caught:
            Fetcher(LOOPBACK, FetchLimits(timeout_seconds=1.0)).get(f"{server.url}/spec.yaml")
        elapsed = time.monotonic() - started
        deadline = time.monotonic() + 10
        while not server.ended and time.monotonic() < deadline:
            time.sleep(0.01)
        closed_by_the_fetcher = len(server.ended)  # the server never ends a connection before it stops
    assert 0.9 < elapsed < 10, elapsed  # timing-ok: ten times the deadline; the drip lasts 5 hours
    assert closed_by_the_fetcher == 1  # the connection was closed, not left dripping
    assert "within 1 s" in str(caught.value)


def test_the_size_cap_applies_to_declared_and_to_streamed_answers(recorder: tuple[Recorder, str]) -> None:
    server, base = recorder

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(20):
            yield b"y" * 1000

    server.answer = b"z" * 5000
    server.routes["/streamed"] = lambda _: web.Response(body=chunks())  # chunked: no Content-Length
    fetcher = Fetcher(LOOPBACK, FetchLimits(max_bytes=4096))
    with pytest.raises(ResponseTooLarge, match="larger than the 4096 bytes allowed"):
        fetcher.get(f"{base}/declared")
    with pytest.raises(ResponseTooLarge, match="larger than the 4096 bytes allowed"):
        fetcher.get(f"{base}/streamed")
    assert len(Fetcher(LOOPBACK, FetchLimits(max_bytes=20_000)).get(f"{base}/streamed")) == 20_000


def _uniform(message: str, port: int) -> str:
    return message.replace(str(port), "PORT")


def test_refused_reset_silent_and_unresolvable_read_the_same() -> None:
    """Errors that would tell open ports from closed ones would make the server a port scanner."""
    fetcher = Fetcher(LOOPBACK, FetchLimits(timeout_seconds=0.5), resolve=resolving({}))
    messages = []
    with misbehaving(resetting) as reset, misbehaving(silent) as quiet:
        for server in (reset, quiet):
            with pytest.raises(FetchFailed) as caught:
                fetcher.get(f"{server.url}/spec.yaml")
            messages.append(_uniform(str(caught.value), server.port))
    port = free_port()  # nothing listens there: connections are refused
    with pytest.raises(FetchFailed) as refused:
        fetcher.get(f"http://127.0.0.1:{port}/spec.yaml")
    messages.append(_uniform(str(refused.value), port))

    def unresolvable(host: str, port: int) -> list[IPAddress]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    with pytest.raises(FetchFailed) as unknown:
        Fetcher(LOOPBACK, FetchLimits(timeout_seconds=0.5), resolve=unresolvable).get("http://127.0.0.1:9/x")
    messages.append(_uniform(str(unknown.value), 9))
    assert len(set(messages)) == 1, messages
    assert messages[0] == (
        "no complete answer from 127.0.0.1:PORT within 0.5 s (the name does not resolve, the connection failed, "
        "or the answer was too slow)"
    )
    assert not re.search(r"refused|reset|timed out|errno", messages[0], re.IGNORECASE)


def test_status_errors_and_bad_urls_are_named(recorder: tuple[Recorder, str]) -> None:
    server, base = recorder
    server.routes["/missing"] = lambda _: web.Response(status=404)
    with pytest.raises(HttpStatusError, match=r"^HTTP 404 Not Found$"):
        Fetcher(LOOPBACK).get(f"{base}/missing")
    with pytest.raises(BadUrl, match="credentials in it"):
        Fetcher(LOOPBACK).get(base.replace("http://", "http://user:pw@") + "/x")
    with pytest.raises(BadUrl, match="only http:// and https://"):
        Fetcher(LOOPBACK).get("ftp://127.0.0.1/x")
    with pytest.raises(BadUrl, match=r"^http://127.0.0.1:99999/x is not a valid URL \(Port out of range"):
        Fetcher(LOOPBACK).get("http://127.0.0.1:99999/x")
    assert [r["path"] for r in server.requests] == ["/missing"]


def test_a_post_carries_its_body_and_a_path_is_sent_encoded(recorder: tuple[Recorder, str]) -> None:
    server, base = recorder
    response = Fetcher(LOOPBACK).request(
        "POST", f"{base}/grâph ql?q=a b", headers={"Content-Type": "application/json"}, body=b'{"query": "{a}"}'
    )
    assert response.status == 200
    [sent] = server.requests
    assert (sent["method"], sent["path"], sent["Content-Length"]) == ("POST", "/gr%C3%A2ph%20ql?q=a%20b", "16")
