"""What an audit event names as its target: a resource's URI without its query or fragment, where a client or a
server may have put a credential (as spans show it); a tool's or a prompt's name as it is."""

from __future__ import annotations

from apimcp.audit.events import Where, guardrail_event, request_event
from apimcp.guardrails.chain import Heard
from apimcp.guardrails.hooks import Finding
from apimcp.protocol.caller import RequestSource
from apimcp.protocol.observe import RequestRecord
from apimcp.telemetry.labels import resource_target

WHERE = Where("org", "exp-1", "library", "books", "1")
SIGNED = "https://files.example.com/report.pdf?X-Amz-Signature=abcd1234secret&token=s3cr3t#page=2"


def _event(method: str, target: str) -> object:
    record = RequestRecord(method, target, 1, "s-1", "r1", "success", None, 2.5, RequestSource(None, "10.0.0.1"))
    return request_event(WHERE, record)["target"]


def test_a_resource_s_uri_is_kept_without_its_query_where_a_credential_may_be() -> None:
    """The finding: the audit trail, which viewers read, kept `?X-Amz-Signature=...&token=...` that spans strip."""
    assert _event("resources/read", SIGNED) == "https://files.example.com/report.pdf"
    assert _event("resources/subscribe", SIGNED) == "https://files.example.com/report.pdf"
    heard = Heard("secrets", "resource", "redacted", (Finding("aws_access_key_id", 1),))
    found = guardrail_event(WHERE, SIGNED, heard, RequestSource(None, "10.0.0.1"), None)
    assert found["target"] == "https://files.example.com/report.pdf" and found["in"] == "resource"


def test_a_resource_s_uri_is_kept_without_the_user_information_of_its_authority() -> None:
    """The finding: `user:password@` stayed in the targets that spans, metrics' labels and the audit trail show."""
    assert _event("resources/read", "postgres://admin:s3cr3t@db.internal/orders") == "postgres://db.internal/orders"
    assert _event("resources/read", "https://alice:hunter2@files.example/x.txt?sig=1") == "https://files.example/x.txt"
    assert _event("resources/read", "https://a@b:c@files.example") == "https://files.example"
    assert resource_target("https://alice:hunter2@files.example/x.txt") == "https://files.example/x.txt"
    # no authority, or none with user information: as it was
    assert _event("resources/read", "mailto:ada@example.com") == "mailto:ada@example.com"
    assert _event("resources/read", "file:///notes/a@b.txt") == "file:///notes/a@b.txt"
    assert _event("resources/read", "https://files.example/people/@ada") == "https://files.example/people/@ada"


def test_a_tool_s_or_a_prompt_s_name_is_kept_as_it_is() -> None:
    assert _event("tools/call", "get_book?x=1") == "get_book?x=1"
    assert _event("prompts/get", "summarize#2") == "summarize#2"
