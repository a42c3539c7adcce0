"""`apimcp quotas` and `apimcp template` against a live control plane: quotas set, shown and enforced with a clear
line; a template made from a settings file, shown, used by `plan create --template` and changed without changing
the plan."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.invoking import run
from tests.deployment.harness import ECHO_SPEC, Deployment

SETTINGS = """
inbound_mode: oauth
oauth:
  issuers: [https://login.example.com]
  scopes: [echo.read]
rate_limit: {caller: 5/min}
audit: true
tasks: slow:5s
"""


def test_quotas_are_set_shown_and_enforced(logged_in: Deployment) -> None:
    shown = json.loads(run("quotas", "show", "-o", "json").output)
    assert shown["expositions"]["limit"] is None
    groups = shown["gateway_groups"]["used"]
    table = run("quotas", "set", "--gateway-groups", str(groups), "--expositions", "7").output
    assert "gateway groups" in table and "unlimited" in table  # gateways: no limit
    refused = run("gateway-group", "create", "eu", "--label", "zone=eu", code=1).output
    assert (
        f"error: the organization's quota of {groups} gateway group{'s' if groups != 1 else ''} is reached "
        f"({groups} in use); an admin can raise it" in refused
    )
    after = json.loads(run("quotas", "set", "--gateway-groups", "", "-o", "json").output)
    assert after["gateway_groups"]["limit"] is None
    assert after["expositions"]["limit"] == 7  # left as it was
    assert "--expositions is a whole number" in run("quotas", "set", "--expositions", "many", code=2).output
    assert "name a quota" in run("quotas", "set", code=2).output
    run("quotas", "set", "--expositions", "none")


def test_a_plan_is_made_from_a_template_and_does_not_follow_it(logged_in: Deployment, tmp_path: Path) -> None:
    settings = tmp_path / "secure.yaml"
    settings.write_text(SETTINGS)
    made = run("template", "create", "secure", "--file", str(settings), "--description", "OAuth, limited").output
    assert "Created template secure" in made
    assert "inbound_mode: oauth" in made
    assert 'rate_limit: {"caller": {"requests": 5, ' in made
    assert "secure" in run("template", "list").output
    shown = json.loads(run("template", "show", "secure", "-o", "json").output)
    assert shown["settings"]["tasks"] == "slow:5s"

    run("import", str(ECHO_SPEC), "--name", "tpl-echo", "--version", "1")
    plan = json.loads(
        run("plan", "create", "tpl-echo:1", "--name", "secured", "--template", "secure", "--tasks", "all",
            "--backend", logged_in.backend, "-o", "json").output
    )  # fmt: skip
    assert (plan["inbound_mode"], plan["audit"], plan["tasks"]) == ("oauth", True, "all")
    assert plan["oauth"]["scopes"] == ["echo.read"]

    plain = tmp_path / "plain.yaml"
    plain.write_text("inbound_mode: none\n")
    assert "Updated template secure" in run("template", "update", "secure", "--file", str(plain)).output
    again = json.loads(run("plan", "show", plan["id"], "-o", "json").output)
    assert (again["inbound_mode"], again["audit"]) == ("oauth", True)
    assert "Deleted template secure." in run("template", "delete", "secure").output
    assert "No templates." in run("template", "list").output


def test_template_files_and_settings_are_checked(logged_in: Deployment, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("rate_limit: {caller: often}\n")
    refused = run("template", "create", "bad", "--file", str(bad), code=1).output
    assert refused.startswith("error: ") and "settings.rate_limit.caller" in refused
    listed = tmp_path / "list.yaml"
    listed.write_text("- inbound_mode: none\n")
    assert "plan settings are a mapping" in run("template", "create", "bad", "--file", str(listed), code=2).output
    missing = run("plan", "create", "tpl-echo:1", "--name", "x", "--template", "nope", code=1).output
    assert "no template 'nope'" in missing
