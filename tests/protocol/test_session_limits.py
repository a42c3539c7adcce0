"""Session-era limits and liveness: record size, session counts, requests and streams at once, ids in errors."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import orjson
import pytest

from apimcp.protocol import EndpointOptions, McpEndpoint, MemorySessionStore, RequestStateSealer
from apimcp.protocol.limits import EndpointLimits
from apimcp.protocol.sessions import Session as SessionRecord
from apimcp.protocol.sessions import SessionsFull, StoreUnavailable
from apimcp.protocol.versions import V2025_11_25
from tests.protocol.showcase import Showcase
from tests.support.live_server import live_server
from tests.support.mcp_http import McpHttp, Reply, Session, modern_message, sse_messages


class Clock:
    """A monotonic clock a test can move forward."""

    def __init__(self) -> None:
        self.skipped = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.skipped


@contextmanager
def serving(store: MemorySessionStore | None = None, endpoint_id: str = "mcp", **options: Any) -> Iterator[McpHttp]:
    limits = options.pop("limits", {})
    endpoint = McpEndpoint(
        Showcase(),
        EndpointOptions(
            sessions=store if store is not None else MemorySessionStore(), limits=EndpointLimits(**limits), **options
        ),
        endpoint_id=endpoint_id,
    )
    with live_server(endpoint, endpoint.shutdown) as base, McpHttp(f"{base}/mcp") as mcp:
        yield mcp


def initialize(mcp: McpHttp, request_id: object, capabilities: Any = None, client_info: Any = None) -> Reply:
    params = {"protocolVersion": "2025-11-25", "capabilities": capabilities or {}}
    params["clientInfo"] = client_info or {"name": "test", "version": "0"}
    return mcp.post({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params})


@contextmanager
def get_stream(mcp: McpHttp, session: Session) -> Iterator[httpx2.Response]:
    headers = {"accept": "text/event-stream", **session.headers()}
    with httpx2.Client(timeout=10) as client, client.stream("GET", mcp.url, headers=headers) as stream:
        assert stream.status_code == 200
        yield stream


class StreamWatch:
    """Reads an SSE stream in the background; `ended` is set when the server ends it."""

    def __init__(self, stream: httpx2.Response) -> None:
        self.ended = threading.Event()
        self._reader = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._reader.start()

    def _drain(self, stream: httpx2.Response) -> None:
        try:
            list(sse_messages(stream.iter_lines()))
            self.ended.set()
        except (httpx2.HTTPError, OSError):
            pass  # the test closed its end first


# --- the session record ------------------------------------------------------------------------------


def test_an_initialize_with_a_megabyte_of_experimental_capabilities_is_400_naming_them() -> None:
    with serving() as mcp:
        reply = initialize(mcp, "big", {"experimental": {"pad": "x" * (1024 * 1024)}})
        assert reply.status == 400 and reply.body["id"] == "big"
        assert reply.error["code"] == -32602
        assert '"capabilities" takes 1048' in reply.error["message"]
        assert "max_session_bytes" in reply.error["message"]
        assert "mcp-session-id" not in reply.headers


def test_a_large_client_info_is_named() -> None:
    with serving(limits={"max_session_bytes": 2000}) as mcp:
        reply = initialize(mcp, 1, None, {"name": "n", "version": "1", "title": "t" * 3000})
        assert reply.status == 400 and '"clientInfo" takes' in reply.error["message"]
        both = initialize(mcp, 2, {"experimental": {"x": "y" * 1200}}, {"name": "n", "version": "1", "t": "z" * 900})
        assert both.status == 400 and '"capabilities" and "clientInfo" take' in both.error["message"]
        assert initialize(mcp, 3, {"sampling": {}}).status == 200


def test_capabilities_reach_handlers_as_sent() -> None:
    with serving() as mcp:
        session = mcp.initialize("2025-11-25", {"elicitation": {}, "experimental": {"x": [1, {"y": None}]}})
        reply = session.request("tools/call", {"name": "elicit"}, {"accept": "application/json"})
        assert "text/event-stream" in reply.error["message"]  # the elicitation capability was seen


def test_subscriptions_count_toward_the_session_record() -> None:
    with serving(limits={"max_session_bytes": 300}) as mcp:
        session = mcp.initialize()
        answers = [session.request("resources/subscribe", {"uri": f"test://{i:040d}"}) for i in range(8)]
        assert all(a.status == 200 for a in answers)
        refused = [a for a in answers if "error" in a.body]
        assert refused and refused[0].error["code"] == -32602
        assert "max_session_bytes" in refused[0].error["message"]
        assert session.request("resources/subscribe", {"uri": "test://0" + "0" * 39}).result == {}  # already held


def test_subscriptions_listen_keeps_its_resource_subscriptions_within_max_session_bytes() -> None:
    """A listen stream keeps its URIs while open: bounded as a session's subscriptions, not by the 4 MiB body."""
    with serving(limits={"max_session_bytes": 300}) as mcp:
        uris = [f"test://{i:040d}" for i in range(8)]  # 376 bytes
        body, headers = modern_message("subscriptions/listen", {"notifications": {"resourceSubscriptions": uris}})
        body["id"] = "listen-big"
        reply = mcp.post(body, headers)
        assert reply.status == 400 and reply.body["id"] == "listen-big"
        assert reply.error["code"] == -32602
        assert "376 bytes" in reply.error["message"] and "max_session_bytes" in reply.error["message"]
        assert reply.error["data"] == {"field": "notifications.resourceSubscriptions"}

        many = [f"test://{i}" for i in range(257)]  # each would be asked of the handler (of an MCP server, perhaps)
        body, headers = modern_message("subscriptions/listen", {"notifications": {"resourceSubscriptions": many}})
        reply = mcp.post(body, headers)
        assert reply.status == 400 and "names 257 URIs; a stream takes 256 at most" in reply.error["message"]

        repeated = {"resourceSubscriptions": [uris[0]] * 1000}  # one URI, however often named
        body, headers = modern_message("subscriptions/listen", {"notifications": repeated})
        with (
            httpx2.Client(timeout=10) as client,
            client.stream("POST", mcp.url, content=orjson.dumps(body), headers=headers) as stream,
        ):
            assert stream.status_code == 200
            ack = next(sse_messages(stream.iter_lines()))
            assert ack["params"]["notifications"] == {"resourceSubscriptions": [uris[0]]}


# --- how many sessions ---------------------------------------------------------------------------------


def test_sessions_beyond_the_endpoints_share_get_503_with_retry_after() -> None:
    store = MemorySessionStore(max_sessions_per_endpoint=3)
    with serving(store) as mcp, serving(store, endpoint_id="other") as other:
        for i in range(3):
            assert initialize(mcp, i).status == 200
        refused = initialize(mcp, "fourth")
        assert refused.status == 503 and refused.body["id"] == "fourth"
        assert refused.error["code"] == -32000 and "max_sessions_per_endpoint" in refused.error["message"]
        assert 1700 <= int(refused.headers["retry-after"]) <= 1800
        assert initialize(other, "elsewhere").status == 200  # another endpoint still has room
        assert mcp.modern("tools/list").status == 200  # stateless requests need no session


def test_one_client_gets_its_share_of_an_endpoint_s_sessions_then_429() -> None:
    """The finding: one anonymous client opened all of an endpoint's sessions in under a second, and every other
    client was refused until they expired, half an hour later."""
    store = MemorySessionStore(max_sessions_per_endpoint=10, max_sessions_per_caller=2)
    with serving(store) as mcp:
        opened = [initialize(mcp, i) for i in range(2)]
        assert [reply.status for reply in opened] == [200, 200]
        refused = initialize(mcp, "third")
        assert refused.status == 429 and refused.body["id"] == "third"
        assert "max_sessions_per_caller" in refused.error["message"] and "retry-after" in refused.headers
        assert len(store) == 2
        first = {"mcp-session-id": opened[0].headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        assert mcp.http.delete(mcp.url, headers=first).status_code == 200
        assert initialize(mcp, "again").status == 200  # its own ended session freed its place


def test_sessions_beyond_the_store_total_get_503() -> None:
    store = MemorySessionStore(max_sessions=2)
    with serving(store) as one, serving(store, endpoint_id="two") as two:
        assert initialize(one, 1).status == 200
        assert initialize(two, 2).status == 200
        refused = initialize(two, 3)
        assert refused.status == 503 and "max_sessions)" in refused.error["message"]
        assert "retry-after" in refused.headers


def test_deleted_sessions_free_their_room() -> None:
    store = MemorySessionStore(max_sessions_per_endpoint=1)
    with serving(store) as mcp:
        session = mcp.initialize()
        assert initialize(mcp, 2).status == 503
        assert mcp.http.delete(mcp.url, headers=session.headers()).status_code == 200
        assert initialize(mcp, 3).status == 200


@pytest.mark.anyio
async def test_a_full_store_expires_idle_sessions_before_refusing() -> None:
    clock = Clock()
    store = MemorySessionStore(idle_timeout=60, max_sessions=2, clock=clock)
    for name in ("a", "b"):
        await store.create(SessionRecord(id=name, endpoint="e", revision=V2025_11_25))
    with pytest.raises(SessionsFull) as full:
        await store.create(SessionRecord(id="c", endpoint="e", revision=V2025_11_25))
    assert full.value.scope == "server" and 59 <= full.value.retry_after <= 60
    clock.skipped = 30
    assert await store.touch("b")  # b was used; a was not
    clock.skipped = 61
    await store.create(SessionRecord(id="c", endpoint="e", revision=V2025_11_25))
    assert await store.get("a") is None and await store.get("b") is not None
    assert len(store) == 2


def test_the_default_idle_expiry_is_half_an_hour() -> None:
    assert MemorySessionStore().idle_timeout == 1800


# --- streams keep sessions alive, and end with them ----------------------------------------------------


def test_an_open_get_stream_keeps_its_session_alive() -> None:
    clock = Clock()
    with serving(MemorySessionStore(idle_timeout=1.0, clock=clock), keepalive_seconds=0.05) as mcp:
        session = mcp.initialize()
        with get_stream(mcp, session):
            # twice the idle timeout, with no request but the open stream, whose ticks (every 0.05 s) touch it
            time.sleep(2.0)
            assert session.request("ping").status == 200
        idle = mcp.initialize()
        clock.skipped = 3600
        assert idle.request("ping").status == 404  # without a stream, it still expires


def test_a_session_that_expires_closes_its_get_stream() -> None:
    clock = Clock()
    with serving(MemorySessionStore(idle_timeout=60, clock=clock), keepalive_seconds=0.2) as mcp:
        session = mcp.initialize()
        with get_stream(mcp, session) as stream:
            watch = StreamWatch(stream)
            assert not watch.ended.wait(0.5)  # ticks keep it open
            clock.skipped = 3600  # the store no longer knows the session at the next tick
            assert watch.ended.wait(3)
        assert session.request("ping").status == 404


def test_delete_closes_the_get_stream() -> None:
    with serving() as mcp:
        session = mcp.initialize()
        with get_stream(mcp, session) as stream:
            watch = StreamWatch(stream)
            assert mcp.http.delete(mcp.url, headers=session.headers()).status_code == 200
            assert watch.ended.wait(3)


def test_a_session_deleted_on_another_replica_closes_its_get_stream() -> None:
    store = MemorySessionStore()  # shared, as a Redis store would be by two replicas of one exposition
    with serving(store, keepalive_seconds=0.2) as one, serving(store, keepalive_seconds=0.2) as two:
        session = one.initialize()
        with get_stream(one, session) as stream:
            watch = StreamWatch(stream)
            assert two.http.delete(two.url, headers=session.headers()).status_code == 200
            assert watch.ended.wait(3)


def test_a_session_deleted_while_a_request_waits_for_the_client_answers_that_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with serving() as mcp:
        session = mcp.initialize("2025-11-25", {"elicitation": {}})
        body = {"jsonrpc": "2.0", "id": "asking", "method": "tools/call", "params": {"name": "elicit"}}
        headers = {"content-type": "application/json", "accept": "text/event-stream", **session.headers()}
        with mcp.http.stream("POST", mcp.url, json=body, headers=headers) as response:
            messages = sse_messages(response.iter_lines())
            assert next(messages)["method"] == "elicitation/create"
            assert mcp.http.delete(mcp.url, headers=session.headers()).status_code == 200
            final = next(messages)
        assert final["id"] == "asking"
        assert final["error"] == {"code": -32603, "message": "The session ended before the client answered"}
    assert not [r for r in caplog.records if r.exc_info]


@pytest.mark.parametrize("ending", ["expired", "deleted on another replica"])
def test_a_get_stream_that_finds_its_session_gone_answers_the_requests_waiting_for_the_client(ending: str) -> None:
    """The GET stream's tick learns that the session ended; who waits for the client learns it at once.

    Without it, they waited for client_request_timeout (here 30 s) although no answer could come.
    """
    clock = Clock()
    store = MemorySessionStore(idle_timeout=60, clock=clock)  # shared, as by two replicas of one exposition
    with (
        serving(store, keepalive_seconds=0.2, client_request_timeout=30) as one,
        serving(store, keepalive_seconds=0.2) as two,
    ):
        session = one.initialize("2025-11-25", {"elicitation": {}})
        body = {"jsonrpc": "2.0", "id": "asking", "method": "tools/call", "params": {"name": "elicit"}}
        headers = {"content-type": "application/json", "accept": "text/event-stream", **session.headers()}
        with get_stream(one, session), one.http.stream("POST", one.url, json=body, headers=headers) as response:
            messages = sse_messages(response.iter_lines())
            assert next(messages)["method"] == "elicitation/create"
            if ending == "expired":
                clock.skipped = 3600
            else:
                assert two.http.delete(two.url, headers=session.headers()).status_code == 200
            final = next(messages)
        assert final["id"] == "asking"
        # a tick or two, not client_request_timeout: that would say "did not answer the server's request in time"
        assert final["error"] == {"code": -32603, "message": "The session ended before the client answered"}


# --- requests and streams at once --------------------------------------------------------------------


def test_more_requests_in_progress_than_a_session_may_have_are_429() -> None:
    with serving(limits={"max_requests_per_session": 2}) as mcp:
        session = mcp.initialize()
        slow = [threading.Thread(target=session.post, args=(_call(f"slow-{i}", "slow"),)) for i in range(2)]
        for thread in slow:
            thread.start()
        deadline = time.monotonic() + 5
        while (reply := session.post(_call("third", "echo", {"text": "x"}))).status != 429:
            assert time.monotonic() < deadline, "the two slow calls never were in progress together"
            time.sleep(0.02)
        assert reply.body["id"] == "third" and reply.error["code"] == -32000
        assert "max_requests_per_session" in reply.error["message"] and reply.headers["retry-after"] == "1"
        assert session.notify("notifications/roots/list_changed").status == 202  # notifications still pass
        for i in range(2):
            session.notify("notifications/cancelled", {"requestId": f"slow-{i}"})
        for thread in slow:
            thread.join(5)
        assert session.post(_call("after", "echo", {"text": "x"})).status == 200


def test_listeners_beyond_the_endpoint_cap_get_503() -> None:
    with serving(limits={"max_listeners": 1}) as mcp:
        first, second = mcp.initialize(), mcp.initialize()
        with get_stream(mcp, first):
            refused = mcp.http.get(mcp.url, headers={"accept": "text/event-stream", **second.headers()})
            assert refused.status_code == 503 and refused.headers["retry-after"] == "5"
            assert refused.json()["error"]["code"] == -32000
            body, headers = modern_message("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
            body["id"] = "listen-1"
            listen = mcp.post(body, headers)
            assert listen.status == 503 and listen.body["id"] == "listen-1"
            assert "max_listeners" in listen.error["message"]
        with get_stream(mcp, second):
            pass  # the first stream's place is free again


def _call(request_id: str, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, **({"arguments": arguments} if arguments else {})},
    }


# --- ids in session errors ---------------------------------------------------------------------------


def test_session_errors_carry_the_request_id() -> None:
    with serving() as mcp:
        missing = mcp.post({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, {"mcp-protocol-version": "2025-11-25"})
        assert missing.status == 400 and missing.body["id"] == 7
        unknown = mcp.post({"jsonrpc": "2.0", "id": "u", "method": "tools/list"}, {"mcp-session-id": "nope"})
        assert unknown.status == 404 and unknown.body["id"] == "u"
        session = mcp.initialize("2025-11-25")
        mismatch = session.post({"jsonrpc": "2.0", "id": 9, "method": "ping"}, {"mcp-protocol-version": "2025-06-18"})
        assert mismatch.status == 400 and mismatch.body["id"] == 9
        notification = mcp.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, {"mcp-session-id": "nope"})
        assert notification.status == 404 and notification.body["id"] is None  # notifications have no id


class _AwayStore:
    """A shared record of opened requestState values that cannot be reached."""

    async def first_use(self, nonce: str, expires_at: float) -> bool:
        raise StoreUnavailable("the state store cannot be reached (ConnectionError)")


def test_a_requeststate_is_not_opened_unchecked_when_its_store_is_away() -> None:
    """A 503 to come back, not an internal error, and never the round run without knowing it ran before."""
    with serving(request_state=RequestStateSealer(used=_AwayStore())) as mcp:
        caps = {"elicitation": {}}
        first = mcp.modern("tools/call", {"name": "elicit"}, capabilities=caps).result
        ((key, _),) = first["inputRequests"].items()
        retry = {"name": "elicit", "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}},
                 "requestState": first["requestState"]}  # fmt: skip
        reply = mcp.modern("tools/call", retry, capabilities=caps)
    assert reply.status == 503 and reply.headers["retry-after"] == "1"
