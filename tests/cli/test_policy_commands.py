"""`apimcp policy` against a live control plane and its gateway: rules set from a file for a plan and for the
organization, shown in the order they are read, tried on a call that is never made, and applied by the gateway
as soon as it follows the change."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

from apimcp.cli.main import app
from tests.deployment.harness import ECHO_SPEC, Deployment, wait_until

RULES = """
policies:
  - name: no-deletes-for-anonymous
    when: '!caller.authenticated && tool.method == "DELETE"'
    effect: deny
    message: Sign in to delete.
  - name: small-ids
    when: int(args.itemId) > 100
    effect: deny
"""
ORGANIZATION = """
- {name: no-raw, when: 'tool.path == "/raw"', effect: deny}
"""


def run(*args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, (args, result.output)
    return result


def test_rules_are_set_shown_tried_and_applied(live: Deployment, tmp_path: Path) -> None:
    token = live.api.http.headers["Authorization"].removeprefix("Bearer ")
    run("login", live.base, "--token", token)
    run("import", str(ECHO_SPEC), "--name", "pol-echo", "--version", "1")
    run("plan", "create", "pol-echo:1", "--name", "guarded", "--backend", live.backend)
    run("expo", "create", "guarded", "--name", "guarded")
    rules, organization = tmp_path / "rules.yaml", tmp_path / "org.yaml"
    rules.write_text(RULES)
    organization.write_text(ORGANIZATION)
    assert "The rules of plan guarded are replaced." in run("policy", "set", str(rules), "--plan", "guarded").output
    run("policy", "set", str(organization), "--organization")
    shown = json.loads(run("policy", "show", "guarded", "-o", "json").output)
    assert [(rule["from"], rule["name"]) for rule in shown] == [
        ("organization", "no-raw"), ("plan", "no-deletes-for-anonymous"), ("plan", "small-ids"),
    ]  # fmt: skip

    tried = run("policy", "test", "guarded", "--call", "delete_item", "--arg", "itemId=3").output
    assert "DENY by rule 'no-deletes-for-anonymous'" in tried
    assert "the caller is told: Calling delete_item is denied by the policy rule" in tried
    assert "listed for this caller: no" in tried
    claims = '{"iss": "https://idp.example", "sub": "ada"}'
    signed_in = run("policy", "test", "guarded", "--call", "delete_item", "--arg", "itemId=3", "--claims", claims)
    assert signed_in.output.startswith("ALLOW no rule held: allowed by default\n")
    big = json.loads(run("policy", "test", "guarded", "--call", "get_item", "--arg", "itemId=500", "-o", "json").output)
    assert (big["decision"], big["rule"]) == ("deny", "small-ids")
    assert run("policy", "test", "guarded", "--call", "get_item", "--arg", "itemId=5").output.startswith("ALLOW")
    assert "--claims is not JSON" in run("policy", "test", "guarded", "--call", "get_item", "--claims", "{",
                                          code=2).output  # fmt: skip
    bad = tmp_path / "bad.yaml"
    bad.write_text("- {name: x, when: 'nope.x', effect: deny}")
    assert "its condition names nope" in run("policy", "set", str(bad), "--plan", "guarded", code=1).output

    url = f"{live.base}/mcp/default/guarded"
    wait_until(lambda: live.served("/mcp/default/guarded"))
    tools = run("tools", url).output
    assert "get_item" in tools and "delete_item" not in tools and "post_raw" not in tools
    denied = json.loads(run("call", url, "get_item", "--arg", "itemId=500", "-o", "json", code=1).output)
    assert denied["content"][0]["text"] == "Calling get_item is denied by the policy rule 'small-ids'"
    read = json.loads(run("call", url, "get_item", "--arg", "itemId=7", "-o", "json").output)
    assert read["structuredContent"]["path"] == "/v1/items/7"
