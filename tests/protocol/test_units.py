"""Unit tests of the engine's small pieces: framing, headers, security, sessions, sealing."""

from __future__ import annotations

import pytest

from apimcp.protocol.headers import MalformedHeader, decode_header_value
from apimcp.protocol.jsonrpc import InvalidMessage, Notification, Request, Response, classify
from apimcp.protocol.request_state import InvalidRequestState, RequestStateSealer, RoundState, request_digest
from apimcp.protocol.security import TransportSecurity
from apimcp.protocol.sessions import MemorySessionStore, Session, new_session_id
from apimcp.protocol.tool_headers import check_param_headers, header_params
from apimcp.protocol.versions import V2025_11_25, V2026_07_28, find_revision, supported_versions

pytestmark = pytest.mark.anyio


# --- versions ----------------------------------------------------------------------------------


def test_revisions_are_an_enumerated_set() -> None:
    assert find_revision("2025-11-25") is V2025_11_25
    assert find_revision("2099-01-01") is None
    assert find_revision(20251125) is None
    assert supported_versions()[0] == "2026-07-28"
    assert V2026_07_28.at_least(V2025_11_25) and not V2025_11_25.at_least(V2026_07_28)


# --- JSON-RPC ----------------------------------------------------------------------------------


def test_classify() -> None:
    assert classify({"jsonrpc": "2.0", "id": 1, "method": "ping"}) == Request(1, "ping", {})
    assert classify({"jsonrpc": "2.0", "method": "n", "params": {"a": 1}}) == Notification("n", {"a": 1})
    assert classify({"jsonrpc": "2.0", "id": "x", "result": {}}) == Response("x", {}, None)
    assert classify({"jsonrpc": "2.0", "id": 2, "error": {"code": 1}}) == Response(2, None, {"code": 1})


@pytest.mark.parametrize(
    ("message", "echoed"),
    [
        ([], None),
        ({"id": 1, "method": "ping"}, 1),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": False, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 4, "method": ""}, 4),
        ({"jsonrpc": "2.0", "id": 4, "method": "x", "params": "p"}, 4),
        ({"jsonrpc": "2.0", "result": {}}, None),
        ({"jsonrpc": "2.0", "id": 9, "result": []}, 9),
        ({"jsonrpc": "2.0", "id": 9}, None),
    ],
)
def test_classify_refuses_invalid_messages(message: object, echoed: object) -> None:
    with pytest.raises(InvalidMessage) as caught:
        classify(message)
    assert caught.value.request_id == echoed
    assert caught.value.code == -32600


# --- mirror headers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (b"tools/call", "tools/call"),
        (b"  padded\t", "padded"),
        (b"=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, 世界"),
        (b"=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", "=?base64?literal?="),
    ],
)
def test_decode_header_value(raw: bytes, value: str) -> None:
    assert decode_header_value(raw) == value


@pytest.mark.parametrize("raw", [b"caf\xc3\xa9", b"a\x01b", b"=?base64?not base64!?=", b"=?base64?/w==?="])
def test_malformed_header_values(raw: bytes) -> None:
    with pytest.raises(MalformedHeader):
        decode_header_value(raw)


def test_x_mcp_header_paths_follow_properties_only() -> None:
    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {"type": "object", "properties": {"flag": {"type": "boolean", "x-mcp-header": "Flag"}}},
        },
    }
    params = header_params(schema)
    assert [(p.header, p.path) for p in params] == [(b"region", ("region",)), (b"flag", ("nested", "flag"))]
    ok = {b"region": b"eu", b"flag": b"true"}
    assert check_param_headers(params, {"region": "eu", "nested": {"flag": True}}, ok) is None
    problem = check_param_headers(params, {"region": "eu", "nested": {"flag": False}}, ok)
    assert problem is not None and "Mcp-Param-Flag" in problem


# --- security ------------------------------------------------------------------------------------


def test_default_security_allows_loopback_only() -> None:
    security = TransportSecurity()
    assert security.host_allowed("localhost:8765")
    assert security.host_allowed("127.0.0.1")
    assert security.host_allowed("[::1]:80")
    assert not security.host_allowed("evil.example.com")
    assert not security.host_allowed(None)
    assert security.origin_allowed(None)
    assert security.origin_allowed("http://localhost:3000")
    assert not security.origin_allowed("http://localhost.evil.com")
    assert not security.origin_allowed("file://")


def test_configured_hosts_and_disabled_security() -> None:
    security = TransportSecurity.for_hosts(["mcp.example.com", "*.corp.example"])
    assert security.host_allowed("MCP.example.com")
    assert security.origin_allowed("https://app.corp.example")
    assert not security.host_allowed("example.com")
    assert TransportSecurity.disabled().host_allowed("anything")


# --- sessions -------------------------------------------------------------------------------------


def _session(session_id: str) -> Session:
    return Session(id=session_id, endpoint="e", revision=V2025_11_25)


async def test_memory_sessions_expire_when_idle() -> None:
    now = [1000.0]
    store = MemorySessionStore(idle_timeout=60, clock=lambda: now[0])
    await store.create(_session("a"))
    now[0] += 59
    assert (await store.get("a")) is not None
    now[0] += 60.5  # idle from that read on: a read counts as use
    assert await store.get("a") is None
    assert not await store.delete("a")


async def test_memory_sessions_delete() -> None:
    store = MemorySessionStore()
    await store.create(_session("b"))
    assert await store.delete("b")
    assert await store.get("b") is None


def test_session_ids_are_visible_ascii_and_long() -> None:
    ids = {new_session_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(len(i) >= 43 and all(0x21 <= ord(c) <= 0x7E for c in i) for i in ids)


# --- requestState ---------------------------------------------------------------------------------


def test_sealed_state_round_trips_and_rotates_keys() -> None:
    old, new = b"o" * 32, b"n" * 32
    digest = request_digest("tools/call", "t", {"a": 1})
    sealed = RequestStateSealer([old]).seal(digest, RoundState({"k": {"action": "accept"}}, {"step": 2}))
    opened = RequestStateSealer([new, old]).open(sealed, digest)
    assert opened.answers == {"k": {"action": "accept"}}
    assert opened.handler_state == {"step": 2}
    with pytest.raises(InvalidRequestState, match="integrity"):
        RequestStateSealer([new]).open(sealed, digest)


def test_sealed_state_is_bound_to_request_principal_and_time() -> None:
    sealer = RequestStateSealer([b"k" * 32], ttl_seconds=-1)
    digest = request_digest("tools/call", "t", {})
    with pytest.raises(InvalidRequestState, match="expired"):
        sealer.open(sealer.seal(digest, RoundState({}, {})), digest)
    sealer = RequestStateSealer([b"k" * 32])
    sealed = sealer.seal(digest, RoundState({}, {}), principal="alice")
    with pytest.raises(InvalidRequestState, match="different user"):
        sealer.open(sealed, digest, principal="bob")
    with pytest.raises(InvalidRequestState, match="different request"):
        sealer.open(sealed, request_digest("tools/call", "other", {}), principal="alice")
    for garbage in ("", "v1.", "v2.abc.def", 42, sealed[:-3] + "AAA"):
        with pytest.raises(InvalidRequestState):
            sealer.open(garbage, digest, principal="alice")


def test_sealer_refuses_weak_keys() -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        RequestStateSealer([b"short"])
    with pytest.raises(ValueError, match="at least one"):
        RequestStateSealer([])
