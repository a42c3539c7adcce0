"""The header policy on its own: what passes, what never does, renames, trace context and Forwarded."""

from __future__ import annotations

import pytest

from apimcp.forwarding.policy import HeaderPolicyError, normalized, parse_header_policy
from apimcp.protocol.caller import RequestSource

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def source(*headers: tuple[str, str], client: str | None = "203.0.113.7") -> RequestSource:
    return RequestSource(
        client=client,
        headers=[(k.encode(), v.encode()) for k, v in [("host", "mcp.example.com"), *headers]],
        scheme="https",
    )


REQUEST = source(
    ("authorization", "Bearer client-token"),
    ("cookie", "sid=1"),
    ("mcp-session-id", "abc"),
    ("mcp-protocol-version", "2025-11-25"),
    ("mcp-param-city", "Paris"),
    ("x-api-key", "inbound-key"),
    ("x-reshapr-key", "inbound-key"),
    ("connection", "keep-alive"),
    ("x-request-id", "r-1"),
    ("x-tenant", "acme"),
    ("x-real-ip", "10.9.9.9"),
    ("x-forwarded-user", "admin"),
    ("if-none-match", '"etag"'),
    ("traceparent", TRACEPARENT),
    ("tracestate", "vendor=1"),
)


def test_by_default_the_client_s_token_cookies_and_transport_headers_stay_behind() -> None:
    passed = parse_header_policy(None).headers_for(REQUEST)
    assert passed == {
        "x-request-id": "r-1",
        "x-tenant": "acme",
        "traceparent": TRACEPARENT,
        "tracestate": "vendor=1",
        "forwarded": "for=203.0.113.7;proto=https;host=mcp.example.com",
        "x-forwarded-for": "203.0.113.7",
    }


def test_headers_a_proxy_would_trust_pass_only_when_allowed() -> None:
    assert parse_header_policy({"allow": ["x-real-ip"]}).headers_for(REQUEST)["x-real-ip"] == "10.9.9.9"


def test_a_non_empty_allow_list_is_all_that_passes() -> None:
    passed = parse_header_policy({"allow": ["X-Tenant"]}).headers_for(REQUEST)
    assert set(passed) == {"x-tenant", "traceparent", "tracestate", "forwarded", "x-forwarded-for"}


def test_deny_adds_to_the_default_denials_and_allow_lifts_one() -> None:
    assert "x-tenant" not in parse_header_policy({"deny": ["x-tenant"]}).headers_for(REQUEST)
    assert (
        parse_header_policy({"allow": ["Authorization"]}).headers_for(REQUEST)["authorization"] == "Bearer client-token"
    )


def test_passthrough_lets_the_client_s_authorization_through_and_nothing_else_changes() -> None:
    passed = parse_header_policy({"passthrough": True}).headers_for(REQUEST)
    assert passed["authorization"] == "Bearer client-token"
    assert "cookie" not in passed


def test_rename_passes_a_header_on_under_another_name_and_a_missing_source_changes_nothing() -> None:
    policy = parse_header_policy({"rename": ["X-Tenant:X-Org", "X-Absent:X-Other"]})
    passed = policy.headers_for(REQUEST)
    assert passed["X-Org"] == "acme"
    assert "x-tenant" not in passed and "X-Other" not in passed


def test_earlier_proxies_are_kept_in_forwarded_and_x_forwarded_for() -> None:
    behind = source(("forwarded", "for=198.51.100.1"), ("x-forwarded-for", "198.51.100.1"), client="10.0.0.2")
    passed = parse_header_policy(None).headers_for(behind)
    assert passed["forwarded"] == "for=198.51.100.1, for=10.0.0.2;proto=https;host=mcp.example.com"
    assert passed["x-forwarded-for"] == "198.51.100.1, 10.0.0.2"
    assert "forwarded" not in parse_header_policy({"forwarded": False}).headers_for(behind)


def test_what_the_client_s_connection_header_names_and_proxy_headers_stay_behind() -> None:
    """The finding: headers named in `Connection` (hop-by-hop, RFC 9110 7.6.1) were passed on, and so were headers
    proxies use to tell a backend how it was reached (`X-Forwarded-Port`, `X-Original-Host`...)."""
    hop = source(("connection", "keep-alive, X-Hop-Secret"), ("x-hop-secret", "s"), ("x-tenant", "acme"),
                 ("x-forwarded-port", "8443"), ("x-forwarded-prefix", "/admin"), ("x-forwarded-scheme", "https"),
                 ("x-original-host", "internal.corp"))  # fmt: skip
    passed = parse_header_policy(None).headers_for(hop)
    assert set(passed) == {"x-tenant", "forwarded", "x-forwarded-for"}
    assert parse_header_policy({"rename": ["X-Hop-Secret:X-Kept"]}).headers_for(hop)["X-Kept"] == "s"  # chosen


def test_the_host_the_backend_is_told_is_the_one_the_host_check_read() -> None:
    """The finding: with two Host headers, the Host check read the last and Forwarded named the first, which no
    check had approved."""
    hosts = [(b"host", b"internal-admin.corp"), (b"host", b"mcp.example.com")]
    twice = RequestSource(client="203.0.113.7", headers=hosts, scheme="https")
    assert (
        parse_header_policy(None).headers_for(twice)["forwarded"] == "for=203.0.113.7;proto=https;host=mcp.example.com"
    )


def test_an_overlong_x_forwarded_for_is_not_carried_on() -> None:
    """The finding: only Forwarded was held to its bound; a 47 KB X-Forwarded-For from the client was passed on."""
    passed = parse_header_policy(None).headers_for(source(("x-forwarded-for", "10.0.0.1, " * 5000)))
    assert passed["x-forwarded-for"] == "203.0.113.7"


def test_malformed_trace_context_is_not_passed_on() -> None:
    bad = source(("traceparent", "00-" + "0" * 32 + "-00f067aa0ba902b7-01"), ("tracestate", "x=1"))
    passed = parse_header_policy(None).headers_for(bad)
    assert "traceparent" not in passed and "tracestate" not in passed


@pytest.mark.parametrize(
    ("policy", "field", "words"),
    [
        ({"allow": "x-a"}, "header_policy.allow", "a list of header names"),
        ({"allow": ["bad name"]}, "header_policy.allow", "is not a header name"),
        ({"deny": ["x-a\n"]}, "header_policy.deny", "is not a header name"),  # a `$` once let it through
        ({"allow": ["mcp-session-id"]}, "header_policy.allow", "never passed on"),
        ({"rename": ["Host:X-Host"]}, "header_policy.rename", "gateway's own"),
        ({"rename": {"x-a": "Content-Length"}}, "header_policy.rename", "set by the gateway itself"),
        ({"passthrough": True, "allow": ["x-a"]}, "header_policy.passthrough", "add Authorization to it"),
        ({"forwarded": "yes"}, "header_policy.forwarded", "true or false"),
        ({"alow": []}, "header_policy.alow", "no field 'alow'"),
    ],
)
def test_a_policy_that_cannot_work_is_refused_naming_the_field(policy: object, field: str, words: str) -> None:
    with pytest.raises(HeaderPolicyError, match=words) as refused:
        parse_header_policy(policy)
    assert refused.value.field == field


def test_a_stored_policy_is_normalized() -> None:
    assert normalized({"allow": ["X-A", "x-b"], "rename": ["X-C:X-D"]}) == {"allow": ["x-a", "x-b"],
                                                                          "rename": {"x-c": "X-D"}}  # fmt: skip
    assert normalized({}) is None
