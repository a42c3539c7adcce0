"""A gateway configuration file is bounded YAML, and the descriptions it names by URL are fetched under the
fetch policy (`server.fetch_allow`), even though the file is the operator's own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web
from typer.testing import CliRunner

from apimcp.cli.main import app
from apimcp.gateway.config import ConfigError, load_config, parse_config
from apimcp.gateway.plan import plan_gateway
from tests.gateway.conftest import ECHO_SPEC
from tests.safety.test_yaml_loading import alias_bomb, never_built
from tests.safety.test_yaml_schema import with_default
from tests.support.live_aiohttp import live_aiohttp


@pytest.fixture
def described() -> Iterator[tuple[str, list[str]]]:
    """The echo API's description served on loopback, and the paths asked for."""
    asked: list[str] = []

    async def description(request: web.Request) -> web.Response:
        asked.append(request.path)
        return web.Response(body=ECHO_SPEC.read_bytes(), content_type="application/yaml")

    def make() -> web.Application:
        app = web.Application()
        app.router.add_get("/echo.yaml", description)
        return app

    with live_aiohttp(make) as base:
        yield base, asked


def test_a_description_url_on_an_internal_host_is_refused_by_default(
    described: tuple[str, list[str]], tmp_path: Path
) -> None:
    base, asked = described
    config = parse_config(f"services:\n  echo:\n    openapi: {base}/echo.yaml\n", "gw.yaml", tmp_path)
    with pytest.raises(ConfigError) as caught:
        plan_gateway(config)
    message = str(caught.value)
    assert message.startswith(
        f"gw.yaml:3:14: services.echo.openapi: {base}/echo.yaml: refused to fetch it: 127.0.0.1 is a loopback"
    )
    assert "server.fetch_allow: [127.0.0.1]" in message
    assert asked == []


def test_server_fetch_allow_lets_it_through(described: tuple[str, list[str]], tmp_path: Path) -> None:
    base, asked = described
    text = f"services:\n  echo:\n    openapi: {base}/echo.yaml\nserver:\n  fetch_allow: [127.0.0.1]\n"
    plan = plan_gateway(parse_config(text, "gw.yaml", tmp_path))
    assert plan.services["echo"].service.name == "Echo API"
    assert plan.config.server.fetch_policy().entries == ("127.0.0.1",)
    assert asked == ["/echo.yaml"]


def test_a_local_description_referencing_an_internal_url_is_refused(
    described: tuple[str, list[str]], tmp_path: Path
) -> None:
    """Local paths are not fetches; the URLs a local description references are."""
    base, asked = described
    main = {
        "openapi": "3.1.0",
        "info": {"title": "Local", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": {"/x": {"$ref": f"{base}/echo.yaml#/paths/~1items~1{{itemId}}"}},
    }
    (tmp_path / "local.json").write_text(json.dumps(main))
    (tmp_path / "gw.yaml").write_text("services:\n  local:\n    openapi: local.json\n")
    with pytest.raises(ConfigError, match=r"refused to fetch it: 127\.0\.0\.1 is a loopback address"):
        plan_gateway(load_config(tmp_path / "gw.yaml"))
    assert asked == []


def test_a_wrong_fetch_allow_entry_is_named_with_its_line(tmp_path: Path) -> None:
    text = f"services:\n  echo:\n    openapi: {ECHO_SPEC}\nserver:\n  fetch_allow: [ok.example, 'not ok']\n"
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "gw.yaml", tmp_path)
    assert str(caught.value) == (
        "gw.yaml:5:16: server.fetch_allow: fetch allow-list entry 'not ok' is not a host name, a *.suffix pattern "
        "or a CIDR network"
    )


def test_an_alias_bomb_configuration_is_refused_before_it_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`apimcp serve` on such a file reached 4.5 GB."""
    (tmp_path / "gw.yaml").write_bytes(alias_bomb() + f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n".encode())
    never_built(monkeypatch)
    with pytest.raises(ConfigError, match=r"gw\.yaml:\d+:\d+: the document expands to more than \d+ bytes"):
        load_config(tmp_path / "gw.yaml")


def test_a_recursive_alias_in_a_configuration_is_an_error_with_its_position(tmp_path: Path) -> None:
    text = f"services: &s\n  echo:\n    openapi: {ECHO_SPEC}\n    include: [*s]\n"
    with pytest.raises(ConfigError, match=r"^gw\.yaml:1:11: an alias refers to a node that contains it"):
        parse_config(text, "gw.yaml", tmp_path)


def test_aliases_still_work_and_errors_keep_their_positions(tmp_path: Path) -> None:
    text = (
        f"services:\n  a: &service\n    openapi: {ECHO_SPEC}\n    timeout: 5\n"
        "  b:\n    <<: *service\n    tool_prefix: b_\n"
    )
    config = parse_config(text, "gw.yaml", tmp_path)
    assert (config.services["b"].timeout, config.services["b"].tool_prefix) == (5, "b_")
    with pytest.raises(ConfigError, match=r"^gw\.yaml:8:14: services\.b\.timeout: Input should be greater than 0"):
        parse_config(text + "    timeout: -1\n", "gw.yaml", tmp_path)


def test_an_integer_beyond_64_bits_is_named_with_its_line_by_apimcp_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21, L2: Python's 4,300-digit limit surfaced unplaced, and a 160-bit default in a description was
    accepted, for orjson to fail on when the tool was listed."""
    monkeypatch.chdir(tmp_path)
    huge = "1" * 5_000
    Path("gw.yaml").write_text(f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    timeout: {huge}\n")
    result = CliRunner().invoke(app, ["serve", "gw.yaml"])
    assert result.exit_code == 2
    assert f"gw.yaml:4:14: the integer {huge[:24]}… (5000 characters) is out of range (at most 64 bits)" in (
        " ".join(result.output.split())  # the message may be wrapped
    )
    Path("huge.yaml").write_bytes(with_default("0x" + "f" * 40))
    Path("gw.yaml").write_text("services:\n  huge:\n    openapi: huge.yaml\n")
    result = CliRunner().invoke(app, ["serve", "gw.yaml"])
    assert result.exit_code == 2
    assert (
        f"gw.yaml:3:14: services.huge.openapi: {tmp_path / 'huge.yaml'}: the integer 0x{'f' * 22}… (42 characters) "
        "is out of range (at most 64 bits) (line 9, column 65)"
    ) in " ".join(result.output.split())
