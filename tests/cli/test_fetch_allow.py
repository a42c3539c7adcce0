"""`--fetch-allow` (and APIMCP_FETCH_ALLOW) on the server commands: what fetches on someone's behalf may reach."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from apimcp.cli.main import app
from apimcp.demo_api import create_app
from apimcp.safety.addresses import AddressPolicy
from tests.support.live_aiohttp import live_aiohttp


@pytest.fixture(scope="module")
def bookshelf_api() -> Iterator[str]:
    with live_aiohttp(create_app) as url:
        yield url


def serve(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["serve", *args], env=env)
    return result.exit_code, result.output


def test_a_description_url_on_loopback_is_refused_with_the_way_to_allow_it(bookshelf_api: str) -> None:
    code, output = serve("--openapi", f"{bookshelf_api}/openapi.yaml")
    assert code == 2
    assert "refused to fetch it: 127.0.0.1 is a loopback address" in output
    assert "--fetch-allow 127.0.0.1" in output


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--fetch-allow", "127.0.0.1"], None),
        (["--fetch-allow", "10.0.0.0/8", "--fetch-allow", "127.0.0.0/8"], None),
        ([], {"APIMCP_FETCH_ALLOW": "descriptions.corp.example,127.0.0.1"}),
        ([], {"APIMCP_FETCH_ALLOW": "*.corp.example, 127.0.0.1"}),
    ],
    ids=["option", "repeated", "variable", "variable-with-spaces"],
)
def test_the_allow_list_lets_the_import_through(
    bookshelf_api: str, args: list[str], env: dict[str, str] | None
) -> None:
    """The description is fetched and read: what stops `serve` now is the include pattern that selects nothing
    (so the test ends before anything is served)."""
    code, output = serve("--openapi", f"{bookshelf_api}/openapi.yaml", "--include", "nothing*", *args, env=env)
    assert code == 2
    assert "--include: 'nothing*' selects no operation" in output, output


@pytest.mark.parametrize(
    "command",
    [
        ["serve"],
        ["control-plane"],
        ["gateway", "--control-plane", "http://127.0.0.1:9", "--token", "t"],
        ["demo"],
    ],
)
def test_a_wrong_entry_is_a_usage_error_naming_it(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--fetch-allow", "not a host"])
    assert result.exit_code == 2
    assert "--fetch-allow: fetch allow-list entry 'not a host' is not a host name" in result.output


@pytest.mark.parametrize("command", ["serve", "control-plane", "gateway", "demo"])
def test_every_server_command_takes_the_option(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert "--fetch-allow" in result.output
    assert "APIMCP_FETCH_ALLOW" in result.output


@pytest.mark.parametrize(
    ("args", "env"), [(["--fetch-allow", "127.0.0.1"], None), ([], {"APIMCP_FETCH_ALLOW": "127.0.0.1"})]
)
def test_the_demo_honours_fetch_allow(
    monkeypatch: pytest.MonkeyPatch, args: list[str], env: dict[str, str] | None
) -> None:
    """Finding: `apimcp demo` ignored --fetch-allow and APIMCP_FETCH_ALLOW, yet its refusal told the user to set
    them. The demo's server is given the policy they make (and not started)."""
    given: list[AddressPolicy | None] = []

    async def not_serving(*_: Any, fetch_policy: AddressPolicy | None = None, **__: Any) -> None:
        given.append(fetch_policy)

    monkeypatch.setattr("apimcp.demo.serve_embedded", not_serving)
    result = CliRunner().invoke(app, ["demo", *args], env=env)
    assert result.exit_code == 0, result.output
    [policy] = given
    assert policy is not None and policy.refusal("127.0.0.1", ipaddress.ip_address("127.0.0.1")) is None
    assert AddressPolicy().refusal("127.0.0.1", ipaddress.ip_address("127.0.0.1")) is not None  # the default
