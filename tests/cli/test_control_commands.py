"""The management commands against a live control plane: tables, JSON, names, clear errors and exit codes."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
from typer.testing import CliRunner, Result

from apimcp.cli.main import app
from tests.control.factories import prompts
from tests.deployment.harness import ECHO_SPEC, Deployment, wait_until
from tests.support.live_server import live_server

SECRET = "tok-9f8e7d6c5b4a-never-printed"


def run(*args: str, code: int = 0, env: dict[str, str] | None = None) -> Result:
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == code, (args, result.output)
    return result


def test_commands_need_a_login_and_a_valid_token(live: Deployment) -> None:
    assert "not logged in: run `apimcp login <url>`" in run("plan", "list", code=1).output
    assert "unknown or revoked token" in run("login", live.base, "--token", "apimcp_user_nope", code=1).output
    assert (
        "cannot reach the control plane at http://127.0.0.1:9"
        in run("login", "http://127.0.0.1:9", "--token", "x", code=1).output
    )


def test_login_keeps_the_token_private(logged_in: Deployment) -> None:
    path = Path(os.environ["APIMCP_CONFIG"])
    saved = json.loads(path.read_text())
    assert saved["url"] == logged_in.base and saved["organization"] == "default"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "Logged out." in run("logout").output
    assert not path.exists()


def test_import_plan_expose_by_name_in_tables_and_json(logged_in: Deployment) -> None:
    imported = run("import", str(ECHO_SPEC), "--name", "cli-echo", "--version", "1").output
    assert "Imported service cli-echo 1 (16 operations)" in imported
    again = json.loads(run("import", str(ECHO_SPEC), "--name", "cli-echo", "--version", "1", "-o", "json").output)
    assert again["service"]["created"] is False  # re-import updates in place

    shown = run(
        "plan",
        "create",
        "cli-echo:1",
        "--name",
        "narrow",
        "--backend",
        logged_in.backend,
        "--include",
        "get_item",
        "--cache",
        "tools/list=5000:public",
    ).output
    assert "Created plan narrow" in shown and "get_item" in shown
    exposition = json.loads(run("expo", "create", "narrow", "--name", "cli-echo", "-o", "json").output)
    assert exposition["endpoints"][0] == "/mcp/default/cli-echo"
    url = f"{logged_in.base}/mcp/default/cli-echo"
    wait_until(lambda: logged_in.served("/mcp/default/cli-echo"))
    assert "get_item" in run("tools", url).output
    called = json.loads(run("call", url, "get_item", "--arg", "itemId=7", "-o", "json").output)
    assert called["structuredContent"]["path"] == "/v1/items/7"

    listed = run("plan", "list", "--service", "cli-echo").output
    assert "narrow" in listed and "cli-echo 1" in listed
    run("plan", "update", "narrow", "--include", "get_item", "--include", "delete_item")
    wait_until(lambda: "delete_item" in run("tools", url).output)
    copy = json.loads(run("plan", "duplicate", "narrow", "--name", "wide", "-o", "json").output)
    assert copy["include"] == ["get_item", "delete_item"]
    run("expo", "update", "cli-echo", "--plan", "wide", "--name", "cli-echo-2")
    assert json.loads(run("expo", "show", "cli-echo-2", "-o", "json").output)["plan"] == "wide"
    duplicate = json.loads(run("expo", "duplicate", "cli-echo-2", "--name", "cli-echo-3", "-o", "json").output)
    assert duplicate["plan_id"] == copy["id"]
    for name in ("cli-echo-2", "cli-echo-3"):
        assert f"Deleted exposition {name}" in run("expo", "delete", name).output
    run("plan", "delete", "wide")
    assert "Deleted service cli-echo 1" in run("service", "delete", "cli-echo").output


def test_errors_name_what_is_wrong(logged_in: Deployment) -> None:
    run("import", str(ECHO_SPEC), "--name", "errs", "--version", "1")
    typo = run("plan", "create", "errs", "--name", "p", "--include", "no_such_op*", code=1).output
    assert "no_such_op*" in typo
    assert "no service 'nope'" in run("plan", "create", "nope", "--name", "p", code=1).output
    assert (
        "--cache expects METHOD=TTL_MS" in run("plan", "create", "errs", "--name", "p", "--cache", "x", code=2).output
    )
    run("plan", "create", "errs", "--name", "p")
    assert "nothing to change" in run("plan", "update", "p", code=2).output
    assert "already has a plan 'p'" in run("plan", "create", "errs", "--name", "p", code=1).output
    run("import", str(ECHO_SPEC), "--name", "errs", "--version", "2")
    run("plan", "create", "errs:2", "--name", "p")
    ambiguous = run("plan", "show", "p", code=1).output
    assert "2 plans are named 'p'; give one of their ids" in ambiguous
    assert "is neither a file nor a URL (http, https, grpc or grpcs)" in run("import", "missing.yaml", code=1).output
    assert "--label expects NAME=VALUE" in run("gateway-group", "create", "g", "--label", "zone", code=2).output


def test_secret_values_never_appear_in_output(logged_in: Deployment) -> None:
    outputs = [
        run(
            "secret",
            "create",
            "svc-token",
            "--kind",
            "bearer",
            "--value-env",
            "token=SVC_TOKEN",
            env={"SVC_TOKEN": SECRET},
        ).output,
        run("secret", "list").output,
        run("secret", "list", "-o", "json").output,
        run("secret", "rotate", "svc-token", "--value", f"token={SECRET}-2").output,
    ]
    assert "svc-token" in outputs[1]
    for text in outputs:
        assert SECRET not in text
    assert "bearer secrets need token" in run("secret", "create", "other", "--kind", "bearer", code=2).output
    assert "--kind must be one of" in run("secret", "create", "other", "--kind", "magic", code=2).output
    run("secret", "delete", "svc-token")


def test_tokens_are_shown_once_and_revocable(logged_in: Deployment) -> None:
    created = json.loads(run("token", "create", "ci", "--days", "1", "-o", "json").output)
    value = created["token"]
    assert created["expires_at"] is not None
    assert value not in run("token", "list").output
    listed = json.loads(run("token", "list", "-o", "json").output)
    assert all("token" not in entry for entry in listed)
    run("token", "revoke", "ci")
    assert "unknown or revoked token" in run("login", logged_in.base, "--token", value, code=1).output


def test_gateway_groups_and_gateways(logged_in: Deployment) -> None:
    run("gateway-group", "create", "eu", "--label", "zone=eu")
    assert json.loads(
        run("gateway-group", "update", "eu", "--label", "zone=eu", "--label", "tier=1", "-o", "json").output
    )["labels"] == {"zone": "eu", "tier": "1"}
    assert "eu" in run("gateway-group", "list").output
    run("gateway-group", "delete", "eu")
    assert "embedded" in run("gateway", "list").output
    assert "give --control-plane URL" in run("gateway", code=2).output


def test_organizations_need_the_admin_token(logged_in: Deployment) -> None:
    assert "set APIMCP_ADMIN_TOKEN" in run("organization", "create", "acme", code=2).output


def test_artifacts_are_attached_from_files_and_urls(logged_in: Deployment, tmp_path: Path) -> None:
    run("import", str(ECHO_SPEC), "--name", "arts", "--version", "1")
    overlay = tmp_path / "overlay.yaml"
    overlay.write_bytes(prompts("arts", "1", "greet", "farewell"))
    assert "Attached overlay.yaml to arts 1" in run("attach", "arts", str(overlay)).output
    app = Starlette(routes=[Route("/hints", lambda _: Response(prompts("arts", "1", "hint")))])
    with live_server(app) as files:
        by_url = json.loads(run("attach", "arts", f"{files}/hints", "-o", "json").output)
    assert (by_url["name"], by_url["source"], by_url["kind"]) == ("hints", f"{files}/hints", "Prompts")
    shown = json.loads(run("service", "show", "arts", "-o", "json").output)
    assert sorted(a["name"] for a in shown["artifacts"]) == ["arts-1-description", "hints", "overlay.yaml"]
    table = run("service", "show", "arts").output
    assert re.search(r"overlay\.yaml +│ Prompts +│ greet, farewell", table), table
    assert re.search(r"arts-1-description +│ description +│ -", table), table
    assert "is neither a file nor an http(s) URL" in run("attach", "arts", "nope.yaml", code=1).output
    overlay.write_bytes(prompts("arts", "2"))
    refused = run("attach", "arts", str(overlay), code=1).output
    assert "/service: the file is for arts 2, not arts 1" in refused


def test_detach_says_which_plans_selected_the_artifact(logged_in: Deployment, tmp_path: Path) -> None:
    run("import", str(ECHO_SPEC), "--name", "detaching", "--version", "1")
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_bytes(prompts("detaching", "1", name.replace(".", "_")))
        run("attach", "detaching", str(tmp_path / name))
    run("plan", "create", "detaching", "--name", "only-a", "--artifact", "a.yaml")
    run("plan", "create", "detaching", "--name", "both", "--artifact", "a.yaml", "--artifact", "b.yaml")
    detached = run("detach", "detaching:1", "a.yaml").output
    assert "Detached a.yaml from detaching 1" in detached
    assert re.search(
        r"plan only-a \(\w+\) no longer selects it: it selected nothing else, so it now serves all", detached
    )
    assert re.search(r"plan both \(\w+\) no longer selects it: it keeps its other artifacts", detached)
    report = json.loads(run("detach", "detaching", "b.yaml", "-o", "json").output)
    assert [(p["name"], p["falls_back_to_all"]) for p in report["impacted_plans"]] == [("both", True)]
    assert "has no artifact 'a.yaml'" in run("detach", "detaching", "a.yaml", code=1).output
    run("service", "delete", "detaching")


def test_plan_secret_is_repeatable_for_operations_needing_several(logged_in: Deployment) -> None:
    run("import", str(ECHO_SPEC), "--name", "two-keys", "--version", "1")
    for name, header in (("two-key", "X-Api-Key"), ("two-client", "X-Client-Id")):
        run("secret", "create", name, "--kind", "api_key", "--field", f"name={header}", "--value", f"value={name}-v")
    both = ("--secret", "two-key", "--secret", "two-client")
    plan = json.loads(run("plan", "create", "two-keys", "--name", "both", *both, "-o", "json").output)
    ids = {s["name"]: s["id"] for s in json.loads(run("secret", "list", "-o", "json").output)}
    assert plan["secret_ids"] == [ids["two-key"], ids["two-client"]]
    updated = json.loads(run("plan", "update", "both", "--secret", "two-client", "-o", "json").output)
    assert updated["secret_ids"] == [ids["two-client"]]
    assert json.loads(run("plan", "update", "both", "--secret", "", "-o", "json").output)["secret_ids"] == []
    clash = run("plan", "update", "both", "--secret", "two-key", "--secret", "two-key", code=1).output
    assert "is given twice" in clash
    run("plan", "delete", "both")
    run("service", "delete", "two-keys")
