"""`apimcp export DIR`: an organization written as the configuration `apimcp apply` takes, and back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner, Result

from apimcp.cli.export_document import _Builder, _rate_limits
from apimcp.cli.main import app
from apimcp.ratelimit.policy import parse_rate_limits
from tests.control.factories import prompts
from tests.deployment.harness import ECHO_SPEC, Deployment, deployment

PROTOS = Path(__file__).parent.parent / "support" / "protos"

ADMIN_TOKEN = "export-test-admin-token-0123456789"
SECRET_VALUES = ("exported-bearer-41", "exported-client-id-42", "exported-introspection-43", "exported-client-44")


@pytest.fixture
def live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Deployment]:
    monkeypatch.setenv("APIMCP_ADMIN_TOKEN", ADMIN_TOKEN)  # read by the server (in this process) per request
    with deployment(tmp_path / "data") as running:
        token = running.api.http.headers["Authorization"].removeprefix("Bearer ")
        run("login", running.base, "--token", token)
        yield running


def run(*args: str, code: int = 0, env: dict[str, str] | None = None) -> Result:
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == code, (args, result.output)
    return result


def _secret(live: Deployment, name: str, kind: str, fields: dict[str, object], values: dict[str, str]) -> str:
    body = {"name": name, "kind": kind, "fields": fields, "values": values}
    return str(live.api.call("POST", "/secrets", 201, json=body)["id"])


def _rich_organization(live: Deployment) -> None:
    """A service with an artifact, two plans (one with nearly every setting), secrets, policies, expositions."""
    files = {"file": ("echo_api.yaml", ECHO_SPEC.read_bytes(), "application/yaml")}
    service = live.api.call("POST", "/services", 201, files=files, data={"name": "rich", "version": "1"})
    artifact = {"file": ("greetings.yaml", prompts("rich", "1", "greet"), "application/yaml")}
    live.api.call("POST", f"/services/{service['id']}/artifacts", 201, files=artifact)
    bearer = _secret(live, "echo-token", "bearer", {}, {"token": SECRET_VALUES[0]})
    client_id = _secret(live, "client", "api_key", {"name": "X-Client-Id"}, {"value": SECRET_VALUES[1]})
    personal = _secret(live, "github", "user_token", {"header": "X-User-Token", "scheme": "token"}, {})
    introspection = _secret(
        live,
        "idp",
        "oauth_introspection",
        {"url": "https://idp.example.com/introspect", "client_id": "gw"},
        {"client_secret": SECRET_VALUES[2]},
    )
    rich = {
        "name": "main",
        "service_id": service["id"],
        "backend_endpoint": live.backend,
        "fallback_endpoints": ["http://127.0.0.1:9/v1"],
        "backend_timeout_ms": 2500,
        "include": ["get_item", "secured", "slow"],
        "exclude": ["slow"],
        "tool_prefix": "rich_",
        "read_only_tools": ["get_item"],
        "secret_ids": [personal, bearer, client_id],  # exported static first, as apply makes them
        "header_policy": {"allow": ["x-request-id"], "rename": {"x-tenant": "x-backend-tenant"}},
        "cache": {"tools/list": {"ttl_ms": 5000, "scope": "public"}},
        "output_schemas": False,
        "audit": True,
        "rate_limit": {"exposition": "100/s", "caller": "5/min"},
        "tasks": "slow:2s",
        "code_mode": "read_only",
        "policies": [
            {"name": "no-deletes", "when": 'tool.name == "rich_secured"', "effect": "deny", "message": "Not here."}
        ],
        "guardrails": [{"use": "secrets", "action": "block"}],
        "resilience": {"retries": {"attempts": 2}, "breaker": {"failures": 3, "open_seconds": 10}},
        "inbound_mode": "oauth",
        "oauth": {"issuers": ["https://idp.example.com"], "scopes": ["mcp:use"]},
        "introspection_secret_id": introspection,
    }
    plan = live.api.call("POST", "/plans", 201, json=rich)
    live.api.call("POST", "/expositions", 201, json={"plan_id": plan["id"], "name": "rich-api"})
    live.api.call("POST", "/expositions", 201, json={"plan_id": plan["id"]})  # unnamed: named after its plan
    machine = _secret(
        live,
        "machine",
        "oauth_client_credentials",
        {"token_url": "https://idp.example.com/token", "client_id": "gw", "scopes": ["read"]},
        {"client_secret": SECRET_VALUES[3]},
    )
    plain = {
        "name": "plain",
        "service_id": service["id"],
        "backend_endpoint": live.backend,
        "tool_search": True,
        "secret_ids": [machine],
    }
    plain_plan = live.api.call("POST", "/plans", 201, json=plain)
    live.api.call("POST", "/expositions", 201, json={"plan_id": plain_plan["id"], "name": "plain"})
    oauth = {"issuers": ["https://idp.example.com"], "scopes": ["mcp:use"], "audiences": ["books"]}
    settings = {"inbound_mode": "oauth", "oauth": oauth, "rate_limit": {"caller": "10/s"}, "audit": True}
    live.api.call("POST", "/templates", 201, json={"name": "secured", "description": "Our IdP", "settings": settings})
    live.api.call("POST", "/templates", 201, json={"name": "quiet", "settings": {"tasks": "slow"}})
    rules = [{"name": "office-hours", "when": "true", "effect": "allow"}]
    live.api.call("PUT", "/organization/policies", json={"policies": rules})


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_an_export_applied_to_an_empty_control_plane_exports_the_same_files(live: Deployment, tmp_path: Path) -> None:
    _rich_organization(live)
    first = run("export", str(tmp_path / "one"))
    written = _files(tmp_path / "one")
    assert set(written) == {
        "apimcp.yaml",
        "services/rich-1/description.yaml",
        "services/rich-1/artifacts/greetings.yaml",
    }
    assert written["services/rich-1/description.yaml"] == ECHO_SPEC.read_bytes()
    assert not any(value.encode() in content for content in written.values() for value in SECRET_VALUES)
    variables = ["MAIN_TOKEN", "MAIN_X_CLIENT_ID", "PLAIN_CLIENT_SECRET", "MAIN_INTROSPECTION_CLIENT_SECRET"]
    for variable in variables:
        assert f"  {variable}  (" in first.stderr
    config = yaml.safe_load(written["apimcp.yaml"])
    assert config["policies"][0]["name"] == "office-hours"
    assert list(config["templates"]) == ["quiet", "secured"]
    assert config["templates"]["secured"]["description"] == "Our IdP"
    assert config["templates"]["secured"]["settings"]["oauth"]["audiences"] == ["books"]
    main = config["services"]["main"]
    assert [c["type"] for c in main["credentials"]] == ["bearer", "api_key", "user_token"]
    assert main["credentials"][2] == {
        "type": "user_token",
        "name": "github",
        "header": "X-User-Token",
        "scheme": "token",
    }
    assert (main["timeout"], main["artifacts"]) == (2.5, ["services/rich-1/artifacts/greetings.yaml"])
    assert main["read_only_tools"] == ["get_item"] and "read_only_tools" not in config["services"]["plain"]
    assert sorted(config["expositions"]) == ["main", "plain", "rich-api"]
    assert config["services"]["plain"]["credentials"] == [
        {
            "type": "oauth_client_credentials",
            "token_url": "https://idp.example.com/token",
            "client_id": "gw",
            "scopes": ["read"],
            "client_secret": {"env": "PLAIN_CLIENT_SECRET"},
        }
    ]
    assert config["expositions"]["rich-api"]["auth"]["introspection"]["client_secret"] == {
        "env": "MAIN_INTROSPECTION_CLIENT_SECRET"
    }

    with deployment(tmp_path / "empty-plane") as empty:  # a control plane of its own, nothing in it yet
        run("login", empty.base, "--token", empty.api.http.headers["Authorization"].removeprefix("Bearer "))
        env = {variable: f"new-{variable.lower()}" for variable in variables}
        run("apply", str(tmp_path / "one" / "apimcp.yaml"), env=env)
        again = run("export", str(tmp_path / "two"))
    assert _files(tmp_path / "two") == written
    for variable in variables:  # the same names, for the secrets apply made
        assert f"  {variable}  (" in again.stderr


def test_what_a_configuration_cannot_hold_is_said(live: Deployment, tmp_path: Path) -> None:
    service = live.api.import_echo("lone", "1")
    group = live.api.call("POST", "/gateway-groups", 201, json={"name": "edge", "labels": {"zone": "edge"}})
    plan = live.api.call(
        "POST",
        "/plans",
        201,
        json={
            "name": "keyed",
            "service_id": service["id"],
            "backend_endpoint": live.backend,
            "inbound_mode": "api_key",
        },
    )
    live.api.call(
        "POST", "/expositions", 201, json={"plan_id": plan["id"], "name": "edge-only", "group_id": group["id"]}
    )
    notes = run("export", str(tmp_path / "out")).stderr
    assert "'edge-only' is on gateway group 'edge'" in notes
    assert "apimcp plan update keyed --inbound api_key" in notes


def test_a_folder_that_holds_something_is_refused_unless_forced(live: Deployment, tmp_path: Path) -> None:
    live.api.import_echo()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    assert "is not empty" in run("export", str(tmp_path / "out"), code=2).stderr
    assert not (tmp_path / "out" / "apimcp.yaml").exists()
    assert "has no plan and is left out" in run("export", str(tmp_path / "out"), "--force").stderr
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"
    assert yaml.safe_load((tmp_path / "out" / "apimcp.yaml").read_text()) == {"services": {}}


def test_a_forced_export_never_writes_through_a_link(live: Deployment, tmp_path: Path) -> None:
    service = live.api.import_echo("linked", "1")
    live.api.expose(service["id"], live.backend, "linked")
    (tmp_path / "outside").mkdir()
    (tmp_path / "out" / "services").mkdir(parents=True)
    (tmp_path / "out" / "services" / "linked-1").symlink_to(tmp_path / "outside")
    refused = run("export", str(tmp_path / "out"), "--force", code=1).stderr
    assert "linked-1 is a link" in refused
    assert list((tmp_path / "outside").iterdir()) == []


def test_export_needs_a_login(tmp_path: Path) -> None:
    assert "not logged in" in run("export", str(tmp_path / "out"), code=1).stderr
    assert not (tmp_path / "out").exists()


def test_graphql_and_grpc_services_round_trip_too(live: Deployment, tmp_path: Path) -> None:
    schema = tmp_path / "library.graphql"
    schema.write_text("type Query { book(id: ID!): Book }\ntype Book { id: ID! title: String }\n")
    run("import", str(schema), "--name", "library", "--version", "1")
    run("import", str(PROTOS / "shop" / "v1" / "shop.proto"), "--proto-path", str(PROTOS))
    backends = {"library": "http://127.0.0.1:9/graphql", "shop.v1.ShopService": "127.0.0.1:9"}
    for service in live.api.call("GET", "/services"):
        live.api.expose(service["id"], backends[service["name"]], service["name"].split(".")[0])
    run("export", str(tmp_path / "one"))
    written = _files(tmp_path / "one")
    services = yaml.safe_load(written["apimcp.yaml"])["services"]
    assert services["library"]["graphql"] == "services/library-1/description.graphql"
    assert (services["shop"]["grpc"], services["shop"]["service"]) == (
        "services/shop.v1.shopservice-v1/description.protoset",
        "shop.v1.ShopService",
    )
    fresh = live.api.call(
        "POST", "/organizations", 201, json={"name": "fresh"}, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    run("login", live.base, "--token", fresh["token"])
    run("apply", str(tmp_path / "one" / "apimcp.yaml"))
    run("export", str(tmp_path / "two"))
    assert _files(tmp_path / "two") == written


def test_a_folder_that_cannot_be_made_is_an_error_line_not_a_traceback(live: Deployment, tmp_path: Path) -> None:
    service = live.api.import_echo("blocked", "1")
    live.api.expose(service["id"], live.backend, "blocked")
    (tmp_path / "file").write_text("in the way")
    assert "cannot make the folder" in run("export", str(tmp_path / "file" / "out"), code=1).stderr
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "services").write_text("a file where a folder goes")
    assert "cannot make the folder" in run("export", str(tmp_path / "out"), "--force", code=1).stderr


def test_a_rate_limit_text_cannot_say_is_written_as_a_mapping() -> None:
    """The finding: a limit of 10 per 0.5 s was written `10/0.5s`, which no configuration reads."""
    limits = _rate_limits({"exposition": {"requests": 10, "per_seconds": 0.5, "burst": 10}, "caller": "5/min"})
    assert limits == {"exposition": {"requests": 10, "per_seconds": 0.5, "burst": 10}, "caller": "5/min"}
    assert parse_rate_limits(limits) == parse_rate_limits(
        {"exposition": {"requests": 10, "per_seconds": 0.5, "burst": 10}, "caller": "5/min"}
    )


def test_a_plans_artifacts_are_written_in_the_order_the_service_attached_them(live: Deployment, tmp_path: Path) -> None:
    """The finding: they were written in the plan's order of selection, and apply attaches them in the file's order:
    what wins between two artifacts (the first attached) changed once applied."""
    service = live.api.import_echo("ordered", "1")
    for name in ("first", "second"):
        artifact = {"file": (f"{name}.yaml", prompts("ordered", "1", "greet"), "application/yaml")}
        live.api.call("POST", f"/services/{service['id']}/artifacts", 201, files=artifact)
    body = {"name": "main", "service_id": service["id"], "backend_endpoint": live.backend,
            "artifacts": ["second.yaml", "first.yaml"]}  # fmt: skip
    plan = live.api.call("POST", "/plans", 201, json=body)
    live.api.call("POST", "/expositions", 201, json={"plan_id": plan["id"], "name": "ordered"})
    run("export", str(tmp_path / "out"))
    written = yaml.safe_load((tmp_path / "out" / "apimcp.yaml").read_text())
    (service_entry,) = written["services"].values()
    assert [Path(path).name for path in service_entry["artifacts"]] == ["first.yaml", "second.yaml"]


def test_a_source_url_the_control_plane_shows_masked_is_noted() -> None:
    """The finding: an MCP server imported from `.../mcp?tenant=acme` was exported as `?tenant=***`, which apply
    then called, with no word about it."""
    builder = _Builder({"services": [], "plans": [], "expositions": [], "secrets": [], "templates": []})
    service = {"name": "notes", "kind": "mcp", "source": "https://notes.example/mcp?tenant=***"}
    assert builder.source(service, None) == {"mcp": "https://notes.example/mcp?tenant=***"}
    assert builder.out.notes == [
        "service 'notes': its URL's query values are masked (https://notes.example/mcp?tenant=***): write them in "
        "before applying"
    ]


def test_names_the_file_cannot_keep_as_they_are_are_noted(live: Deployment, tmp_path: Path) -> None:
    """The finding: plans and expositions came back cut at 64 characters, or as `main-2`, without a word."""
    first, second = live.api.import_echo("one", "1"), live.api.import_echo("two", "1")
    long_name = "p" * 70
    for number, (service, name) in enumerate(((first, "main"), (second, "main"), (first, long_name))):
        plan = live.api.call("POST", "/plans", 201, json={"name": name, "service_id": service["id"],
                                                          "backend_endpoint": live.backend})  # fmt: skip
        exposition = f"shop-{number}-{'x' * 70}"
        live.api.call("POST", "/expositions", 201, json={"plan_id": plan["id"], "name": exposition})
    said = run("export", str(tmp_path / "out")).stderr
    assert "plan 'main' is written as 'main-2': applied, that is its name" in said
    assert f"plan '{long_name}' is written as '{'p' * 64}'" in said
    assert f"exposition 'shop-0-{'x' * 70}' is written as 'shop-0-{'x' * 57}'" in said
