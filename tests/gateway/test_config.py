"""The YAML configuration: what it accepts, and errors that name the file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from apimcp.backends.credentials import ApiKey, Basic, Bearer
from apimcp.gateway.config import ConfigError, load_config, parse_config
from apimcp.gateway.plan import plan_gateway
from tests.gateway.conftest import ECHO_SPEC, HERE


def parse(text: str) -> object:
    return parse_config(text, "gw.yaml", HERE)


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        plan_gateway(parse(text))  # type: ignore[arg-type]
    return str(caught.value)


def test_a_minimal_config_exposes_each_service() -> None:
    config = parse_config(f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n", "gw.yaml", HERE)
    plan = plan_gateway(config)
    assert [e.name for e in plan.expositions] == ["echo"]
    assert len(plan.services["echo"].operations) > 10
    assert config.server.port == 8080


def test_relative_description_paths_are_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "api.yaml").write_text(ECHO_SPEC.read_text())
    (tmp_path / "gw.yaml").write_text("services:\n  echo:\n    openapi: api.yaml\n")
    plan = plan_gateway(load_config(tmp_path / "gw.yaml"))
    assert plan.services["echo"].service.name == "Echo API"


def test_include_exclude_and_overrides() -> None:
    plan = plan_gateway(
        parse(f"""
services:
  echo:
    openapi: {ECHO_SPEC}
    name: Renamed
    version: 3
    tool_prefix: e_
    include: ["GET /items/*", "query*", "postF*"]
    exclude: [e_query_styles]
""")
    )
    planned = plan.services["echo"]
    assert planned.service.name == "Renamed" and planned.service.version == "3"
    assert sorted(op.tool_name for op in planned.operations) == ["e_get_item", "e_post_form"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("services: {}\n", "gw.yaml:1:11: services: "),
        (
            "services:\n  echo:\n    backend: http://x\n",
            "gw.yaml:3:5: services.echo: give exactly one of openapi, graphql, grpc, mcp or stdio",
        ),
        (
            f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    timout: 3\n",
            "gw.yaml:4:5: services.echo.timout: unknown key",
        ),
        (
            f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    backend: ftp://x\n",
            "gw.yaml:4:14: services.echo.backend:",
        ),
        (f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    timeout: -1\n", "gw.yaml:4:14: services.echo.timeout:"),
        (
            f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    credentials:\n      type: bearer\n      token: abc\n",
            "gw.yaml:6:14: services.echo.credentials",
        ),
        (
            f"services:\n  echo:\n    openapi: {ECHO_SPEC}\nexpositions:\n  x:\n    services: [nope]\n",
            "names unknown services: nope",
        ),
        (
            f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n  echo:\n    openapi: x\n",
            "gw.yaml:4:3: 'echo' appears twice",
        ),
        ("services:\n  echo: [unclosed\n", "gw.yaml:3:1: not valid YAML"),
        (
            f"services:\n  echo:\n    openapi: {ECHO_SPEC}\nexpositions:\n  x:\n    services: [echo]\n"
            "    cache: {tools/call: {ttl_ms: 1}}\n",
            "tools/call cannot be cached",
        ),
    ],
)
def test_errors_name_file_line_and_key(text: str, expected: str) -> None:
    message = error_of(text)
    assert expected in message


def test_config_errors_about_variables_and_patterns_name_file_line_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding: errors found after the file was read (patterns, variables, descriptions) named only the service."""
    monkeypatch.delenv("UNSET_TOKEN", raising=False)
    monkeypatch.delenv("UNSET_KEY", raising=False)
    assert error_of(
        f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    include: [get_item, get_itme]\n    exclude:\n      - nope\n"
    ) == (
        "gw.yaml:4:25: services.echo.include[1]: 'get_itme' selects no operation\n"
        "gw.yaml:6:9: services.echo.exclude[0]: 'nope' selects no operation"
    )
    assert (
        error_of(
            f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    exclude: [delete_item]\n"
            "    read_only_tools: [get_item, delete_item]\n"
        )
        == "gw.yaml:5:33: services.echo.read_only_tools[1]: 'delete_item' selects no tool of this service"
    )
    credentials = "{type: bearer, token: {env: UNSET_TOKEN}}"
    assert error_of(
        f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    credentials: {credentials}\n"
        "server:\n  request_state_keys: [{env: UNSET_KEY}]\n"
    ) == (
        "gw.yaml:4:40: services.echo.credentials.token: the environment variable UNSET_TOKEN is not set\n"
        "gw.yaml:6:24: server.request_state_keys[0]: the environment variable UNSET_KEY is not set"
    )
    missing = error_of("services:\n  echo:\n    openapi: missing.yaml\n")
    assert missing.startswith("gw.yaml:3:14: services.echo.openapi: ") and "could not read it" in missing
    assert error_of(f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    exclude: ['*']\n") == (
        "gw.yaml:4:14: services.echo.exclude: exclude leaves no operation to expose"
    )
    clash = (
        f"services:\n  a:\n    openapi: {ECHO_SPEC}\n  b:\n    openapi: {ECHO_SPEC}\n"
        "expositions:\n  both:\n    services: [a, b]\n"
    )
    assert error_of(clash).startswith("gw.yaml:8:15: expositions.both.services: services 'a' and 'b' both offer")
    assert "give one of them a tool_prefix" in error_of(clash)
    admin = '{name: refunds, when: "true", effect: approve, approver: admin}'
    alone = f"services:\n  echo:\n    openapi: {ECHO_SPEC}\nexpositions:\n  e:\n    services: [echo]\n"
    assert error_of(f"{alone}    policies:\n      - {admin}\n") == (
        "gw.yaml:8:9: expositions.e.policies[0]: the rule 'refunds' has approver: admin, which needs a control plane "
        "to ask an administrator (`apimcp apply` this file to one); a gateway serving a configuration file alone can "
        "ask only the person behind the caller's client (approver: caller)"
    )
    assert error_of(f"{alone}policies:\n  - {admin}\n").startswith("gw.yaml:8:5: policies[0]: the rule 'refunds'")


HOSTLESS = """swagger: "2.0"
info: {title: Hostless, version: "1"}
basePath: /v1
paths:
  /items: {get: {operationId: listItems, responses: {"200": {description: ok}}}}
"""


def test_a_service_whose_only_server_is_a_path_needs_a_backend_when_planned(tmp_path: Path) -> None:
    """Finding: a Swagger 2.0 description without host (its server: /v1) passed without a backend, and every call
    failed with "The backend URL is not valid: /v1/items"."""
    (tmp_path / "hostless.yaml").write_text(HOSTLESS)
    with pytest.raises(ConfigError) as refused:
        plan_gateway(parse_config("services:\n  hostless:\n    openapi: hostless.yaml\n", "gw.yaml", tmp_path))
    assert str(refused.value) == (
        "gw.yaml:3:5: services.hostless: the description gives only a path as its server URL ('/v1'), with no host "
        "to call (as a Swagger 2.0 description without host does); set 'backend' to the API's URL"
    )
    backed = "services:\n  hostless:\n    openapi: hostless.yaml\n    backend: https://api.example.com/v1\n"
    (planned,) = plan_gateway(parse_config(backed, "gw.yaml", tmp_path)).services.values()
    assert planned.config.backend == "https://api.example.com/v1"  # with a backend, the path server means nothing


def test_a_request_state_key_too_short_is_refused_naming_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """It was a ValueError traceback from the engine once serving started."""
    monkeypatch.setenv("SHORT_KEY", "s3cret")
    text = f"services:\n  echo:\n    openapi: {ECHO_SPEC}\nserver:\n  request_state_keys:\n    - {{env: SHORT_KEY}}\n"
    assert error_of(text) == (
        "gw.yaml:6:7: server.request_state_keys[0]: SHORT_KEY holds 6 bytes; a requestState key needs at least 16"
    )
    monkeypatch.setenv("SHORT_KEY", "sixteen bytes at least")
    assert plan_gateway(parse(text)).request_state_keys == (b"sixteen bytes at least",)  # type: ignore[arg-type]


def test_credentials_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKEN", "t0ken")
    monkeypatch.setenv("PASS", "pa55")
    monkeypatch.setenv("KEY", "k3y")
    cases = {
        "{type: bearer, token: {env: TOKEN}}": Bearer("t0ken"),
        "{type: basic, username: ada, password: {env: PASS}}": Basic("ada", "pa55"),
        "{type: api_key, name: X-Key, value: {env: KEY}}": ApiKey("X-Key", "k3y", "header"),
        "{type: api_key, in: query, name: key, value: {env: KEY}}": ApiKey("key", "k3y", "query"),
    }
    for yaml_text, expected in cases.items():
        plan = plan_gateway(parse(f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    credentials: {yaml_text}\n"))
        assert plan.services["echo"].credentials == (expected,)
    monkeypatch.delenv("TOKEN")
    message = error_of(
        f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    credentials: {{type: bearer, token: {{env: TOKEN}}}}\n"
    )
    assert message == "gw.yaml:4:40: services.echo.credentials.token: the environment variable TOKEN is not set"


def test_an_operation_whose_security_requires_two_schemes_at_once_is_given_both_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Finding: `credentials` took one scheme; a list gives every call all of them."""
    monkeypatch.setenv("KEY", "k3y")
    monkeypatch.setenv("CLIENT", "cl1ent")
    both = (
        "\n      - {type: api_key, name: X-Api-Key, value: {env: KEY}}"
        "\n      - {type: api_key, name: X-Client-Id, value: {env: CLIENT}}\n"
    )
    plan = plan_gateway(parse(f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    credentials:{both}"))
    assert plan.services["echo"].credentials == (ApiKey("X-Api-Key", "k3y"), ApiKey("X-Client-Id", "cl1ent"))


@pytest.mark.parametrize(
    ("credentials", "expected"),
    [
        ("[{type: api_key, name: X-Key, value: {env: A}}, {type: api_key, name: x-key, value: {env: B}}]",
         "gw.yaml:3:5: services.echo: credentials: [0] and [1] would both set the header 'x-key'"),
        ("[{type: bearer, token: {env: A}}, {type: basic, username: u, password: {env: B}}]",
         "credentials: [0] and [1] would both set the header 'Authorization': a request carries only one"),
        ("[{type: api_key, name: X-Key, value: {env: A}}, {type: bearer, token: abc}]",
         "gw.yaml:4:88: services.echo.credentials[1].token: secrets are not written in the file"),
        ("{type: bearer, token: {env: A}, colour: red}", "gw.yaml:4:50: services.echo.credentials.colour: unknown key"),
    ],
)  # fmt: skip
def test_credentials_that_cannot_go_together_are_refused_where_they_are_written(
    credentials: str, expected: str
) -> None:
    assert expected in error_of(f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    credentials: {credentials}\n")


def test_two_cookies_or_a_query_key_and_a_header_go_together(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A", "a")
    text = (
        f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    credentials:\n"
        "      - {type: api_key, in: cookie, name: a, value: {env: A}}\n"
        "      - {type: api_key, in: cookie, name: b, value: {env: A}}\n"
        "      - {type: api_key, in: query, name: a, value: {env: A}}\n"
        "      - {type: bearer, token: {env: A}}\n"
    )
    assert len(parse(text).services["echo"].resolved_credentials()) == 4


def test_an_oauth_client_gets_every_call_a_token_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLIENT_SECRET", "cl1ent-secret")
    client = (
        "{type: oauth_client_credentials, token_url: https://idp.example.com/token, client_id: gw, "
        "client_secret: {env: CLIENT_SECRET}, scopes: [read], audience: https://api.example.com}"
    )
    plan = plan_gateway(parse(f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    credentials: {client}\n"))
    fields = {"token_url": "https://idp.example.com/token", "client_id": "gw", "scopes": ["read"],
              "audience": "https://api.example.com"}  # fmt: skip
    assert plan.services["echo"].clients == (
        {"kind": "oauth_client_credentials", "fields": fields, "values": {"client_secret": "cl1ent-secret"}},
    )
    assert "cl1ent-secret" not in repr(plan)
    with_bearer = f"[{client}, {{type: bearer, token: {{env: CLIENT_SECRET}}}}]"
    refused = error_of(f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    credentials: {with_bearer}\n")
    assert "credentials: [0] and [1] would both set the header 'Authorization'" in refused


def test_secrets_never_show_in_reprs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKEN", "super-secret-value")
    plan = plan_gateway(
        parse(
            f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    credentials: {{type: bearer, token: {{env: TOKEN}}}}\n"
        )
    )
    assert "super-secret-value" not in repr(plan)


@pytest.mark.parametrize(
    ("name", "location", "problem"),
    [
        ("X Key", "header", "'X Key' cannot be a header name"),
        ("a;b", "cookie", "'a;b' cannot be a cookie name"),
        ('"k\\u0000"', "query", "the name holds the control character NUL"),
    ],
)
def test_an_api_key_name_no_header_can_carry_failed_every_call(name: str, location: str, problem: str) -> None:
    text = (
        f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n"
        f"    credentials: {{type: api_key, in: {location}, name: {name}, value: {{env: K}}}}\n"
    )
    assert problem in error_of(text)
