"""`apimcp gateway-key`: the pair is made locally, the private half stays in a 0600 file, admins only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from apimcp.cli.main import app
from apimcp.sealing.keys import GatewayKey
from tests.deployment.harness import Deployment


def run(*args: str, code: int = 0, env: dict[str, str] | None = None) -> Result:
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == code, (args, result.output)
    return result


@pytest.fixture
def admin(live: Deployment) -> Deployment:
    token = str(live.api.http.headers["Authorization"]).removeprefix("Bearer ")
    run("login", live.base, "--token", token)
    return live


def test_create_list_and_revoke_a_gateway_key(admin: Deployment, tmp_path: Path) -> None:
    path = tmp_path / "site-a.pem"
    created = run("gateway-key", "create", "site-a", "--out", str(path)).output
    assert f"Private key written to {path} (mode 0600)" in created
    assert path.stat().st_mode & 0o777 == 0o600
    key = GatewayKey.load(path)
    assert key.public.fingerprint in created
    assert "PRIVATE KEY" not in created
    [listed] = [k for k in json.loads(run("gateway-key", "list", "-o", "json").output) if k["name"] == "site-a"]
    assert listed["public_key"] == key.public.text
    assert "exists; give another --out" in run("gateway-key", "create", "other", "--out", str(path), code=2).output
    assert f"Revoked gateway key site-a ({key.public.fingerprint})" in run("gateway-key", "revoke", "site-a").output
    [revoked] = [k for k in json.loads(run("gateway-key", "list", "-o", "json").output) if k["name"] == "site-a"]
    assert revoked["revoked_at"] is not None


def test_a_user_token_cannot_create_a_gateway_key_and_leaves_no_key_file(admin: Deployment, tmp_path: Path) -> None:
    issued = json.loads(run("token", "create", "colleague", "--kind", "user", "-o", "json").output)
    as_user = {"APIMCP_URL": admin.base, "APIMCP_TOKEN": issued["token"]}
    path = tmp_path / "sneaky.pem"
    refused = run("gateway-key", "create", "sneaky", "--out", str(path), code=1, env=as_user).output
    needs = (
        "POST /api/v1/gateway-keys needs the admin role in organization default; this is a user token, with the editor"
    )
    assert f"{needs} role" in refused
    assert not path.exists()
    gateway = run("token", "create", "edge", "--kind", "gateway", code=1, env=as_user).output
    assert "POST /api/v1/tokens needs the admin role" in gateway
    assert "apimcp_gateway_" in run("token", "create", "edge", "--kind", "gateway").output
