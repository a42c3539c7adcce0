"""A plan's preview: every operation of its service with the name the prefix gives it, whether the patterns
select it and why not, the patterns that select nothing; the same selection a saved plan then serves."""

from __future__ import annotations

from typing import Any

from tests.control.api_harness import Api, created, import_echo, ok, problem


def _preview(client: Any, **body: Any) -> Any:
    return client.post("/plans/preview", json=body)


def test_the_preview_names_what_the_patterns_select_and_why_not(api: Api) -> None:
    acme = api.org("acme-preview")
    service = import_echo(acme.user)
    everything = ok(_preview(acme.user, service_id=service["id"]))
    assert everything["served"] == everything["total"] == len(everything["tools"]) > 2
    first, second, *_ = everything["tools"]
    assert first["served"] and first["why_not"] is None and first["signature"]

    shown = ok(_preview(acme.user, service_id=service["id"], include=[first["name"], second["name"]],
                        exclude=[second["name"]], tool_prefix="shop_"))  # fmt: skip
    by_name = {tool["name"]: tool for tool in shown["tools"]}
    assert shown["served"] == 1
    assert by_name[f"shop_{first['name']}"]["served"] is True
    assert by_name[f"shop_{second['name']}"]["why_not"] == f"excluded by {second['name']}"
    others = [
        tool for tool in shown["tools"] if tool["name"] not in (f"shop_{first['name']}", f"shop_{second['name']}")
    ]
    assert others and all(tool["why_not"] == "not included" for tool in others)

    typo = ok(_preview(acme.user, service_id=service["id"], include=["no_such_tool"]))
    assert typo["unmatched"] == {"include": ["no_such_tool"], "exclude": []} and typo["served"] == 0


def test_what_the_preview_serves_is_what_the_saved_plan_serves(api: Api) -> None:
    acme = api.org("acme-preview-2")
    service = import_echo(acme.user)
    names = [tool["name"] for tool in ok(_preview(acme.user, service_id=service["id"]))["tools"]]
    selection = {"include": [names[0], names[1], names[2]], "exclude": [names[1]], "tool_prefix": "p_"}
    previewed = ok(_preview(acme.user, service_id=service["id"], **selection))
    plan = created(acme.user.post("/plans", json={"service_id": service["id"], "name": "previewed", **selection}))
    created(acme.user.post("/expositions", json={"plan_id": plan["id"], "name": "previewed"}))
    (exposition,) = acme.snapshot()["expositions"]
    (member,) = exposition["members"]
    served = [tool["name"] for tool in previewed["tools"] if tool["served"]]
    assert served == [f"p_{names[0]}", f"p_{names[2]}"]
    assert member["include"] == selection["include"] and member["exclude"] == selection["exclude"]


def test_a_bad_preview_is_refused_clearly(api: Api) -> None:
    acme, other = api.org("acme-preview-3"), api.org("other-preview")
    service = import_echo(acme.user)
    problem(_preview(acme.user, service_id=service["id"], tool_prefix="bad prefix!"), 422, "tool_prefix")
    problem(_preview(acme.user, service_id=service["id"], include=[""]), 422, "include")
    problem(_preview(other.user, service_id=service["id"]), 404)
