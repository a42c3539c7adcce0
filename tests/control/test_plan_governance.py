"""Governance in the control plane: a plan's rules and its organization's, checked where they are written (422
naming the rule), kept as written, carried by snapshots (the organization's first), copied by duplication, set
for the organization by an admin only, tried on a call by `policy-test`; a plan's guardrails likewise; both added
by migration 0013."""

from __future__ import annotations

from typing import Any

from sqlalchemy import inspect, text

from apimcp.control.store import Store
from tests.control.api_harness import Api, Org, created, import_echo, ok, problem

READ_ONLY = {"name": "contractors-read-only", "when": '"contractors" in claims.groups && !tool.read_only',
             "effect": "deny", "message": "Contractors may only read."}  # fmt: skip
EU = {"name": "eu-items", "when": 'claims.region != "eu" && args.itemId.startsWith("eu-")', "effect": "deny"}
MASK = {"name": "mask", "when": 'claims.sub == "partner"', "effect": "redact", "fields": ["headers"]}
NO_RAW = {"name": "no-raw", "when": 'tool.path == "/raw"', "effect": "deny"}
CONTRACTOR = {"iss": "https://idp.example", "sub": "carol", "groups": ["contractors"], "region": "us"}


def _plan(org: Org, **values: Any) -> dict[str, Any]:
    service = import_echo(org.user)
    body = {"service_id": service["id"], "name": "main", "backend_endpoint": "https://echo.example/v1", **values}
    plan: dict[str, Any] = created(org.user.post("/plans", json=body))
    return plan


def test_a_plan_keeps_its_rules_as_written_and_none_is_null(api: Api) -> None:
    acme = api.org("acme")
    plan = _plan(acme, policies=[READ_ONLY, EU])
    assert plan["policies"] == [READ_ONLY, EU]
    path = f"/plans/{plan['id']}"
    assert ok(acme.user.get(path))["policies"] == [READ_ONLY, EU]
    assert ok(acme.user.patch(path, json={"description": "same rules"}))["policies"] == [READ_ONLY, EU]
    assert ok(acme.user.patch(path, json={"policies": []}))["policies"] is None
    assert ok(acme.user.patch(path, json={"policies": [MASK]}))["policies"] == [MASK]
    copy = created(acme.user.post(f"{path}/duplicate", json={"name": "copy"}))
    assert copy["policies"] == [MASK]


def test_a_rule_that_cannot_be_used_is_refused_naming_it(api: Api) -> None:
    acme = api.org("acme")
    plan = _plan(acme, policies=[READ_ONLY])
    for rules, says in [
        ([{"name": "typo", "when": "claim.sub == 'x'", "effect": "deny"}],
         "policies[0] (typo): its condition names claim, which is not one of args, caller, claims, now, tool"),
        ([{"name": "broken", "when": "claims.sub ==", "effect": "deny"}],
         "policies[0] (broken): its condition is not valid CEL"),
        ([READ_ONLY, READ_ONLY], "another rule is named 'contractors-read-only'"),
        ("deny everything", "policies: Input should be a valid list"),
    ]:  # fmt: skip
        refused = problem(acme.user.patch(f"/plans/{plan['id']}", json={"policies": rules}), 422, "policies")
        assert says in refused["detail"], refused
    assert ok(acme.user.get(f"/plans/{plan['id']}"))["policies"] == [READ_ONLY]  # unchanged


def test_the_organization_s_rules_are_set_by_an_admin_and_snapshots_carry_both(api: Api) -> None:
    acme = api.org("acme")
    plan = _plan(acme, policies=[READ_ONLY])
    created(acme.user.post("/expositions", json={"plan_id": plan["id"], "name": "echo"}))
    member = api.member(acme)
    refused = member.put("/organization/policies", json={"policies": [NO_RAW]})
    assert refused.status_code == 403, refused.text
    before = acme.snapshot()["revision"]
    assert ok(acme.user.put("/organization/policies", json={"policies": [NO_RAW]}))["policies"] == [NO_RAW]
    assert ok(member.get("/organization"))["policies"] == [NO_RAW]
    snapshot = acme.snapshot()
    assert snapshot["revision"] > before  # gateways follow the change
    [entry] = snapshot["expositions"]
    assert (entry["organization_policies"], entry["policies"]) == ([NO_RAW], [READ_ONLY])
    bad = acme.user.put("/organization/policies", json={"policies": [{"name": "x", "when": "1 +", "effect": "deny"}]})
    assert "policies[0] (x): its condition is not valid CEL" in problem(bad, 422, "policies")["detail"]
    assert ok(acme.user.put("/organization/policies", json={"policies": None}))["policies"] is None
    assert api.org("bravo").snapshot()["expositions"] == []  # another organization's rules are not acme's


def test_policy_test_says_what_would_happen_and_which_rule_decided(api: Api) -> None:
    acme = api.org("acme")
    plan = _plan(acme, policies=[READ_ONLY, EU, MASK])
    ok(acme.user.put("/organization/policies", json={"policies": [NO_RAW]}))
    path = f"/plans/{plan['id']}/policy-test"
    denied = ok(acme.user.post(path, json={"tool": "delete_item", "arguments": {"itemId": "1"}, "claims": CONTRACTOR}))
    assert denied == {
        "tool": "delete_item", "decision": "deny", "rule": "contractors-read-only",
        "message": "Calling delete_item is denied by the policy rule 'contractors-read-only': Contractors may only "
        "read.",
        "redact": [], "redacted_by": [], "errors": [],
        "listed": False, "rules": 4,
    }  # fmt: skip
    read = ok(acme.user.post(path, json={"tool": "get_item", "arguments": {"itemId": "eu-1"}, "claims": CONTRACTOR}))
    assert (read["decision"], read["rule"], read["listed"]) == ("deny", "eu-items", True)
    partner = {"iss": "https://idp.example", "sub": "partner", "region": "eu", "groups": []}
    masked = ok(acme.user.post(path, json={"tool": "get_item", "arguments": {"itemId": "eu-1"}, "claims": partner}))
    assert (masked["decision"], masked["rule"], masked["redact"]) == ("allow", None, ["headers"])
    raw = ok(acme.user.post(path, json={"tool": "post_raw", "claims": partner}))
    assert (raw["decision"], raw["rule"], raw["listed"]) == ("deny", "no-raw", False)
    unknown = acme.user.post(path, json={"tool": "nothing", "claims": partner})
    assert "serves no operation named 'nothing'" in problem(unknown, 404)["detail"]
    anonymous = problem(acme.user.post(path, json={"tool": "get_item", "claims": {"sub": "x"}}), 422, "claims")
    assert "claims name their issuer (iss), as a token's do" in anonymous["detail"]
    nobody = problem(acme.user.post(path, json={"tool": "get_item", "claims": {"iss": "https://idp.example"}}), 422,
                     "claims")  # fmt: skip
    assert "the access token names neither a subject nor a client" in nobody["detail"]
    client = ok(acme.user.post(path, json={"tool": "get_item", "claims": {"iss": "https://i", "client_id": "agent"}}))
    # a client's token is read as the gateway reads it; without a region, the EU rule cannot be evaluated: denied
    assert (client["decision"], client["rule"]) == ("deny", "eu-items")
    assert "eu-items" in [error["rule"] for error in client["errors"]]


def test_a_plan_keeps_its_guardrails_and_snapshots_carry_them(api: Api) -> None:
    acme = api.org("acme")
    written = [{"use": "secrets", "action": "block", "on": ["arguments", "answers"]},
               {"use": "acme_dlp", "action": "report", "on": ["answers"], "options": {"level": 2}}]  # fmt: skip
    plan = _plan(acme, guardrails=written)
    assert plan["guardrails"] == written  # a name the control plane does not know: the gateway must have it
    created(acme.user.post("/expositions", json={"plan_id": plan["id"], "name": "echo"}))
    [entry] = acme.snapshot()["expositions"]
    assert entry["guardrails"] == written
    path = f"/plans/{plan['id']}"
    bad = acme.user.patch(path, json={"guardrails": [{"use": "secrets", "action": "shout"}]})
    assert (
        "guardrails[0] (secrets): action is one of report, redact, block" in problem(bad, 422, "guardrails")["detail"]
    )
    assert ok(acme.user.patch(path, json={"guardrails": [{"use": "personal_data"}]}))["guardrails"] == [
        {"use": "personal_data", "action": "report", "on": ["arguments", "answers"]}
    ]
    copy = created(acme.user.post(f"{path}/duplicate", json={"name": "copy"}))
    assert copy["guardrails"] == [{"use": "personal_data", "action": "report", "on": ["arguments", "answers"]}]
    assert ok(acme.user.patch(path, json={"guardrails": None}))["guardrails"] is None


def test_a_plan_keeps_its_resilience_and_snapshots_carry_it(api: Api) -> None:
    acme = api.org("acme")
    plan = _plan(acme, resilience={"retries": True, "cache": {"tools": {"get_item": 60}}})
    kept = {"retries": {"attempts": 3, "backoff_ms": 100, "max_backoff_ms": 2000, "budget_percent": 20,
                        "deadline_ms": 30_000},
            "cache": {"ttl_seconds": 30.0, "tools": {"get_item": 60.0}}}  # fmt: skip
    assert plan["resilience"] == kept
    created(acme.user.post("/expositions", json={"plan_id": plan["id"], "name": "echo"}))
    [entry] = acme.snapshot()["expositions"]
    assert entry["resilience"] == kept
    path = f"/plans/{plan['id']}"
    bad = acme.user.patch(path, json={"resilience": {"breaker": {"failures": 0}}})
    assert "resilience.breaker.failures is from 1 to 1000, not 0" in problem(bad, 422, "resilience")["detail"]
    assert ok(acme.user.patch(path, json={"resilience": None}))["resilience"] is None


def test_a_plan_keeps_its_fallback_urls_and_only_an_admin_moves_a_plan_with_secrets(api: Api) -> None:
    acme = api.org("acme")
    plan = _plan(acme, fallback_endpoints=["https://echo-2.example/v1", "https://echo-3.example/v1"])
    assert plan["fallback_endpoints"] == ["https://echo-2.example/v1", "https://echo-3.example/v1"]
    created(acme.user.post("/expositions", json={"plan_id": plan["id"], "name": "echo"}))
    [entry] = acme.snapshot()["expositions"]
    assert entry["members"][0]["fallback_endpoints"] == plan["fallback_endpoints"]
    path = f"/plans/{plan['id']}"
    bad = acme.user.patch(path, json={"fallback_endpoints": ["ftp://echo.example"]})
    assert "ftp://echo.example: " in problem(bad, 422, "fallback_endpoints")["detail"]
    secret = created(acme.user.post("/secrets", json={"name": "key", "kind": "bearer", "values": {"token": "t0k3n"}}))
    ok(acme.user.patch(path, json={"secret_ids": [secret["id"]]}))
    member = api.member(acme)
    moved = member.patch(path, json={"fallback_endpoints": ["https://attacker.example/v1"]})
    assert moved.status_code == 403, moved.text  # the plan's secrets would go there
    assert ok(acme.user.patch(path, json={"fallback_endpoints": []}))["fallback_endpoints"] is None


def _columns(store: Store, table: str) -> set[str]:
    return {column["name"] for column in inspect(store.engine).get_columns(table)}


def test_migration_0013_adds_empty_policies_and_takes_them_away(database_url: str) -> None:
    store = Store(database_url)
    try:
        store.migrate_to("0012")
        assert "policies" not in _columns(store, "plans") and "policies" not in _columns(store, "organizations")
        with store.engine.begin() as connection:
            connection.execute(text("INSERT INTO organizations (id, name, created_at) VALUES ('o', 'acme', :now)"),
                               {"now": "2026-01-01 00:00:00"})  # fmt: skip
        store.migrate_to("0013")
        with store.engine.begin() as connection:
            assert connection.execute(text("SELECT id, policies FROM organizations")).all() == [("o", None)]
        assert {"policies", "guardrails", "resilience", "fallback_endpoints"} <= _columns(store, "plans")
        store.migrate_to("0012", down=True)
        assert not {"policies", "guardrails", "resilience", "fallback_endpoints"} & _columns(store, "plans")
        assert "policies" not in _columns(store, "organizations")
    finally:
        store.dispose()
