"""Plan templates: presets of plan settings, checked as a plan's, copied into plans made from them (on SQLite and
PostgreSQL, through the REST API)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.control.api_harness import Api, Org, created, import_echo, ok, problem

OAUTH = {"issuers": ["https://login.example.com"], "scopes": ["echo.read"]}
SECURE = {
    "inbound_mode": "oauth",
    "oauth": OAUTH,
    "rate_limit": {"exposition": "100/s", "caller": "5/min"},
    "header_policy": {"allow": ["x-request-id"]},
    "audit": True,
    "tasks": "slow:5s",
    "tool_search": True,
    "backend_timeout_ms": 5000,
    "cache": {"tools/list": {"ttl_ms": 60000, "scope": "public"}},
}


@pytest.fixture
def acme(api: Api) -> Org:
    return api.org("acme")


@pytest.fixture
def echo(acme: Org) -> dict[str, Any]:
    service: dict[str, Any] = import_echo(acme.user)
    return service


def _template(org: Org, name: str = "secure", settings: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = created(
        org.user.post("/templates", json={"name": name, "settings": SECURE if settings is None else settings})
    )
    return body


def test_a_template_keeps_its_settings_as_a_plan_keeps_them(acme: Org) -> None:
    template = _template(acme)
    settings = template["settings"]
    assert settings["rate_limit"] == {
        "exposition": {"requests": 100, "per_seconds": 1, "burst": 100},
        "caller": {"requests": 5, "per_seconds": 60, "burst": 5},
    }
    assert settings["tasks"] == "slow:5s"
    assert settings["inbound_mode"] == "oauth"
    assert settings["oauth"]["issuers"] == ["https://login.example.com"]
    assert ok(acme.user.get(f"/templates/{template['id']}")) == template
    assert ok(acme.user.get("/templates/secure")) == template  # by name too
    assert [t["name"] for t in ok(acme.user.get("/templates"))] == ["secure"]


def test_a_plan_made_from_a_template_gets_its_settings_and_its_own_fields_win(acme: Org, echo: dict[str, Any]) -> None:
    _template(acme)
    plan = created(
        acme.user.post(
            "/plans",
            json={"service_id": echo["id"], "name": "main", "template": "secure", "audit": False, "tasks": "all"},
        )
    )
    assert plan["inbound_mode"] == "oauth"
    assert plan["oauth"]["scopes"] == ["echo.read"]
    assert plan["rate_limit"]["caller"] == {"requests": 5, "per_seconds": 60, "burst": 5}
    assert plan["header_policy"]["allow"] == ["x-request-id"]
    assert (plan["tool_search"], plan["backend_timeout_ms"]) == (True, 5000)
    assert plan["cache"] == {"tools/list": {"ttl_ms": 60000, "scope": "public"}}
    assert (plan["audit"], plan["tasks"]) == (False, "all")  # the request's own


def test_a_request_choosing_another_inbound_mode_takes_none_of_the_templates_oauth(
    acme: Org, echo: dict[str, Any]
) -> None:
    template = _template(acme)
    plan = created(
        acme.user.post(
            "/plans",
            json={"service_id": echo["id"], "name": "keyed", "template": template["id"], "inbound_mode": "api_key"},
        )
    )
    assert plan["inbound_mode"] == "api_key"
    assert plan["api_key"].startswith("apimcp_key_")
    assert plan["oauth"] is None
    assert plan["audit"] is True


def test_changing_or_deleting_the_template_changes_no_plan(acme: Org, echo: dict[str, Any]) -> None:
    template = _template(acme)
    plan = created(acme.user.post("/plans", json={"service_id": echo["id"], "name": "main", "template": "secure"}))
    before = ok(acme.user.get(f"/plans/{plan['id']}"))
    changed = ok(
        acme.user.patch(
            f"/templates/{template['id']}",
            json={"name": "open", "settings": {"inbound_mode": "none", "rate_limit": {"exposition": "1/s"}}},
        )
    )
    assert changed["settings"] == {
        "inbound_mode": "none",
        "rate_limit": {"exposition": {"requests": 1, "per_seconds": 1, "burst": 1}},
    }
    assert ok(acme.user.get(f"/plans/{plan['id']}")) == before
    acme.user.delete(f"/templates/{template['id']}")
    problem(acme.user.get(f"/templates/{template['id']}"), 404)
    assert ok(acme.user.get(f"/plans/{plan['id']}")) == before
    # the template's history: made, changed, deleted, with what differs
    versions = ok(acme.user.get(f"/templates/{template['id']}/versions"))["items"]
    assert [v["action"] for v in versions] == ["deleted", "updated", "created"]
    changes = ok(acme.user.get(f"/templates/{template['id']}/diff", params={"from": 1, "to": 2}))["changes"]
    assert {"name", "settings.inbound_mode"} <= {change["path"] for change in changes}


def test_a_templates_settings_are_checked_as_a_plans(acme: Org) -> None:
    def refused(settings: dict[str, Any], field: str) -> str:
        body = problem(acme.user.post("/templates", json={"name": "bad", "settings": settings}), 422, field)
        return str(body["detail"])

    assert "limit" in refused({"rate_limit": {"exposition": "many"}}, "settings.rate_limit.exposition")
    refused({"tasks": "sometimes"}, "settings.tasks")
    refused({"code_mode": "maybe"}, "settings.code_mode")
    refused({"backend_timeout_ms": 0}, "settings.backend_timeout_ms")
    refused({"policies": [{"name": "x", "when": "tool ==", "effect": "deny"}]}, "settings.policies")
    refused({"inbound_mode": "oauth"}, "settings.oauth")
    refused({"oauth": OAUTH}, "settings.oauth")
    refused({"inbound_mode": "oauth", "oauth": {"issuers": []}}, "settings.oauth.issuers")
    refused({"cache": {"tools/call": {"ttl_ms": 1}}}, "settings.cache")
    problem(acme.user.post("/templates", json={"name": "bad", "settings": {"include": ["getItem"]}}), 422)
    problem(acme.user.post("/templates", json={"name": "bad", "settings": {"inbound_mode": "open"}}), 422)
    problem(acme.user.post("/templates", json={"name": "no good", "settings": {}}), 422, "name")
    assert ok(acme.user.get("/templates")) == []
    _template(acme, "taken", {})
    problem(acme.user.post("/templates", json={"name": "taken", "settings": {}}), 409, "name")


def test_tool_scopes_are_checked_against_the_service_when_a_plan_is_made(acme: Org, echo: dict[str, Any]) -> None:
    _template(acme, "scoped", {"inbound_mode": "oauth", "oauth": {**OAUTH, "tool_scopes": {"get_item": ["a"]}}})
    _template(acme, "typo", {"inbound_mode": "oauth", "oauth": {**OAUTH, "tool_scopes": {"get_itme": ["a"]}}})
    created(acme.user.post("/plans", json={"service_id": echo["id"], "name": "ok", "template": "scoped"}))
    problem(
        acme.user.post("/plans", json={"service_id": echo["id"], "name": "no", "template": "typo"}),
        422,
        "oauth.tool_scopes.get_itme",
    )


def test_an_unknown_template_is_refused_naming_the_field(acme: Org, echo: dict[str, Any]) -> None:
    body = problem(
        acme.user.post("/plans", json={"service_id": echo["id"], "name": "main", "template": "nope"}), 404, "template"
    )
    assert body["detail"] == "no template 'nope'"


def test_editors_make_templates_and_only_an_admin_puts_a_secret_in_one(api: Api, acme: Org) -> None:
    member = api.member(acme)
    created(member.post("/templates", json={"name": "limits", "settings": {"rate_limit": {"caller": "5/s"}}}))
    secret = created(
        acme.user.post(
            "/secrets",
            json={
                "name": "introspect",
                "kind": "oauth_introspection",
                "fields": {"url": "https://login.example.com/introspect", "client_id": "gw"},
                "values": {"client_secret": "s3cret"},
            },
        )
    )
    with_secret = {"inbound_mode": "oauth", "oauth": OAUTH, "introspection_secret_id": secret["id"]}
    problem(member.post("/templates", json={"name": "introspected", "settings": with_secret}), 403)
    template = created(acme.user.post("/templates", json={"name": "introspected", "settings": with_secret}))
    assert template["settings"]["introspection_secret_id"] == secret["id"]
    # and an editor cannot attach it to a plan through the template either
    service = import_echo(member)
    body = problem(
        member.post("/plans", json={"service_id": service["id"], "name": "p", "template": "introspected"}), 403
    )
    assert "secrets" in body["detail"]


def test_templates_are_the_organizations_own(api: Api, acme: Org) -> None:
    template = _template(acme)
    beta = api.org("beta")
    problem(beta.user.get(f"/templates/{template['id']}"), 404)
    problem(beta.user.patch(f"/templates/{template['id']}", json={"name": "mine"}), 404)
    problem(beta.user.delete(f"/templates/{template['id']}"), 404)
    service = import_echo(beta.user)
    problem(beta.user.post("/plans", json={"service_id": service["id"], "name": "p", "template": template["id"]}), 404)
    assert ok(beta.user.get("/templates")) == []
