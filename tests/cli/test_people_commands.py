"""`apimcp members`, `join`, `whoami` and `switch-org`: an admin invites, a person joins with the code and acts in
each of their organizations, a member's role changes and their removal ends their tokens."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner, Result

from apimcp.cli import context
from apimcp.cli.main import app
from apimcp.control.domain import orgs, tokens
from tests.deployment.harness import Deployment


def run(*args: str, code: int = 0, env: dict[str, str] | None = None) -> Result:
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == code, (args, result.output)
    return result


def _admin_token(live: Deployment) -> str:
    return str(live.api.http.headers["Authorization"]).removeprefix("Bearer ")


def _second_organization(live: Deployment, name: str) -> str:
    """An organization besides `default`, and its admin token."""
    with live.plane.session() as session:
        organization = orgs.create(session, name)
        _, value = tokens.issue(session, organization.id, "owner", tokens.ADMIN)
    return value


def _code(output: str) -> str:
    found = re.search(r"(apimcp_invite_\S+)", output)
    assert found is not None, output
    return found.group(1)


def test_members_invite_join_switch_org_set_role_and_remove(live: Deployment, tmp_path: Path) -> None:
    beta_admin = _second_organization(live, "beta-cli")
    run("login", live.base, "--token", _admin_token(live))
    invited = run("members", "invite", "Dana@Example.com", "editor").output
    assert "Invited dana@example.com as editor" in invited
    code = _code(invited)
    pending = json.loads(run("members", "list", "--invitations", "-o", "json").output)
    assert [i["email"] for i in pending] == ["dana@example.com"] and code not in json.dumps(pending)

    # beta's admin invites her too, as a viewer
    as_beta = {"APIMCP_URL": live.base, "APIMCP_TOKEN": beta_admin}
    beta_code = _code(run("members", "invite", "dana@example.com", "viewer", env=as_beta).output)

    # Dana joins with the code alone: she becomes a person, and the CLI logs in as her
    run("logout")
    joined = run("join", code, "--url", live.base, "--name", "Dana").output
    assert "Joined organization default as editor" in joined and "Logged in as dana@example.com" in joined
    run("join", beta_code)  # signed in: she joins beta as herself
    me = run("whoami").output
    assert "dana@example.com: editor in organization default" in me
    assert "  beta-cli (viewer)" in me and "* default (editor)" in me

    assert "Switched to organization beta-cli as viewer" in run("switch-org", "beta-cli").output
    saved = context.load()
    assert saved is not None and saved.organization == "beta-cli"
    assert "dana@example.com: viewer in organization beta-cli" in run("whoami").output
    refused = run("gateway-group", "create", "nope", code=1).output
    assert "needs the editor role in organization beta-cli; dana@example.com has the viewer role here" in refused
    assert "is not a member of organization 'gamma'" in run("switch-org", "gamma", code=1).output
    run("switch-org", "default")
    assert "editor in organization default" in run("whoami").output

    # an admin changes her role, then removes her: her token stops working
    dana = context.load()
    assert dana is not None
    run("login", live.base, "--token", _admin_token(live))
    listed = json.loads(run("members", "list", "-o", "json").output)
    assert [(m["email"], m["role"], m["display_name"]) for m in listed] == [("dana@example.com", "editor", "Dana")]
    assert "dana@example.com is now viewer" in run("members", "set-role", "dana@example.com", "viewer").output
    as_dana = {"APIMCP_URL": live.base, "APIMCP_TOKEN": dana.token}
    assert "viewer in organization default" in run("whoami", env=as_dana).output
    assert (
        "a role is one of admin, editor, viewer"
        in run("members", "set-role", "dana@example.com", "boss", code=2).output
    )
    assert "Removed dana@example.com" in run("members", "remove", "dana@example.com").output
    assert "unknown or revoked token" in run("whoami", code=1, env=as_dana).output
    assert "no member 'dana@example.com'" in run("members", "remove", "dana@example.com", code=1).output


def test_a_service_account_stays_in_its_organization(live: Deployment) -> None:
    _second_organization(live, "beta-sa")
    run("login", live.base, "--token", _admin_token(live))
    refused = run("switch-org", "beta-sa", code=1).output
    assert "a service account's token: it acts only in organization default" in refused
    assert "service account" in run("whoami").output


def test_an_editor_cannot_invite(live: Deployment) -> None:
    run("login", live.base, "--token", _admin_token(live))
    issued = json.loads(run("token", "create", "editor-cli", "--kind", "user", "-o", "json").output)
    as_editor = {"APIMCP_URL": live.base, "APIMCP_TOKEN": issued["token"]}
    refused = run("members", "invite", "x@example.com", "viewer", code=1, env=as_editor).output
    assert "POST /api/v1/invitations needs the admin role in organization default" in refused
    run("members", "list", env=as_editor)  # reading is anyone's
