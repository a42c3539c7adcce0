"""Backend redirects: followed within the backend's origin with its credentials, never to another origin."""

from __future__ import annotations

import pytest

from tests.gateway.hostile_backend import hostile_backend
from tests.gateway.test_echoed_credentials import KEY, call, hostile_gateway

ORIGIN_CREDENTIALS = [
    "{type: api_key, name: X-Api-Key, value: {env: T_KEY}}",
    "{type: api_key, in: cookie, name: session, value: {env: T_KEY}}",
    "{type: api_key, in: query, name: key, value: {env: T_KEY}}",
    "{type: bearer, token: {env: T_TOKEN}}",
]


@pytest.fixture(autouse=True)
def _secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("T_KEY", KEY)
    monkeypatch.setenv("T_TOKEN", "bearer-token-1234")


@pytest.mark.parametrize(
    ("credentials", "status"),
    [*((ORIGIN_CREDENTIALS[0], status) for status in (301, 302, 303, 307, 308)),
     *((credentials, 307) for credentials in ORIGIN_CREDENTIALS[1:])],
    ids=["header-301", "header-302", "header-303", "header-307", "header-308", "cookie", "query", "bearer"],
)  # fmt: skip
def test_an_api_key_header_secret_no_longer_follows_a_backend_s_cross_origin_redirect(
    credentials: str, status: int
) -> None:
    """Finding: the redirect is not followed at all; the result names the status and the other origin."""
    with hostile_backend() as elsewhere, hostile_gateway(credentials) as (mcp, backend):
        other = elsewhere.url.removesuffix("/v1")
        result, _ = call(mcp, "away", {"to": f"{other}/landing?x=1", "status": status})
        assert result["isError"] is True
        text = result["content"][0]["text"]
        assert text.startswith(f"The backend answered HTTP {status} ")
        assert f"a redirect to another origin ({other}), which is not followed" in text
        assert elsewhere.seen == []  # nothing, credentials or not, went there
        assert len(backend.seen) == 1


def test_a_redirect_to_another_port_or_scheme_of_the_same_host_is_another_origin() -> None:
    with hostile_gateway(ORIGIN_CREDENTIALS[0]) as (mcp, backend):
        same_host = backend.url.removesuffix("/v1")
        https = "https" + same_host.removeprefix("http")
        result, _ = call(mcp, "away", {"to": f"{https}/v1/echo"})
        assert f"another origin ({https})" in result["content"][0]["text"]
        port = int(same_host.rsplit(":", 1)[1])
        other_port = f"http://127.0.0.1:{port + 1 if port < 65535 else port - 1}"
        result, _ = call(mcp, "away", {"to": f"{other_port}/v1/echo"})
        assert f"another origin ({other_port})" in result["content"][0]["text"]
        assert len(backend.seen) == 2


@pytest.mark.parametrize("credentials", ORIGIN_CREDENTIALS, ids=["header", "cookie", "query", "bearer"])
def test_same_origin_redirects_are_followed_with_every_credential(credentials: str) -> None:
    with hostile_gateway(credentials) as (mcp, backend):
        result, seen = call(mcp, "hops", {"count": 3})
        assert not result.get("isError"), result
        assert [r["target"].split("?")[0] for r in backend.seen] == [f"/v1/hops/{n}" for n in (3, 2, 1, 0)]
        for request in backend.seen:  # every hop carried the credential
            assert KEY in str(request) or "bearer-token-1234" in str(request)
        assert KEY not in seen and "***" in seen


def test_a_backend_that_redirects_without_end_is_stopped() -> None:
    with hostile_gateway(ORIGIN_CREDENTIALS[0]) as (mcp, backend):
        result, _ = call(mcp, "hops", {"count": 50})
        assert result["isError"] is True
        assert result["content"][0]["text"] == (
            "The backend redirected more than 5 times; the last redirect was not followed"
        )
        assert len(backend.seen) == 6


@pytest.mark.parametrize(
    ("status", "method", "body"),
    [(307, "POST", '{"note":"kept"}'), (308, "POST", '{"note":"kept"}'), (303, "GET", None), (302, "GET", None)],
)
def test_a_same_origin_redirect_keeps_or_drops_the_body_as_http_says(
    status: int, method: str, body: str | None
) -> None:
    with hostile_gateway(ORIGIN_CREDENTIALS[0]) as (mcp, _backend):
        result, _ = call(mcp, "moved", {"status": status, "note": "kept"})
        assert not result.get("isError"), result
        echo = result["structuredContent"]
        assert (echo["method"], echo["target"], echo["body"]) == (method, "/v1/echo", body)
        assert echo["headers"]["X-Api-Key"] == "***"
        assert ("Content-Type" in echo["headers"]) is (body is not None)
